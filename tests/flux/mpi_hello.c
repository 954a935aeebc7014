/* mpi_hello.c: a tiny MPI program for the Flux tests (test_flux_mpi.py compiles it with
 * mpicc into the test's temporary directory; no binary is committed).
 *
 * Prints one line per rank: "<rank> <size> <sum of rank+1 over all ranks> <broker rank>",
 * the broker rank being the Flux broker (node) the process runs on, read with
 * `flux getattr rank` before MPI_Init (no fork after MPI is up). MPI_Allreduce proves
 * the ranks wired up with each other, not only that each started. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void broker_rank(char *out, size_t len) {
    char line[64] = "";
    FILE *p = popen("flux getattr rank 2>/dev/null", "r");
    if (p != NULL) {
        if (fgets(line, sizeof line, p) == NULL)
            line[0] = '\0';
        pclose(p);
    }
    line[strcspn(line, "\n")] = '\0';
    snprintf(out, len, "%s", line[0] != '\0' ? line : "?");
}

int main(int argc, char **argv) {
    char broker[16];
    int rank, size, mine, sum = 0;

    broker_rank(broker, sizeof broker);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("%d %d %d %s\n", rank, size, sum, broker);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
