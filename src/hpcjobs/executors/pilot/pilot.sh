# The body of a pilot's batch job (run by /bin/sh): a Flux instance whose initial
# program publishes how to reach it, then waits until the client asks it to stop.
# $1: the pilot's directory (shared with the client); $2: the flux command; $3: the
# number of brokers of a test instance on this one node (flux start --test-size), or
# empty for one broker.
# The instance's exit status is the initial program's: 0 once asked to stop.
# Values reach the inner shell as arguments, never inside its text.
#
# The pilot's own record of its end, for the client (the batch scheduler may say it
# only much later): "signals" gets a line per signal the script got (the scheduler
# ending the job), "end" the instance's exit status once it is gone.
trap 'echo TERM >> "$1/signals"' TERM
trap 'echo HUP >> "$1/signals"' HUP
# (unquoted: no word or one, $3 being digits or empty)
"$2" start ${3:+--test-size=$3} /bin/sh -c '
uri=$("$2" getattr local-uri) || exit 1
# written whole, then renamed: the client never reads half a file
printf "%s\n%s\n" "$uri" "$(uname -n)" > "$1/uri.tmp" && mv -f "$1/uri.tmp" "$1/uri" || exit 1
# blocks inside Flux (no polling) until the client writes the key; prints the reason
exec "$2" kvs get --watch --waitcreate --count=1 hpcjobs.pilot.stop
' hpcjobs-pilot "$1" "$2" &
pid=$!
# a trapped signal interrupts wait: wait again until the instance is really gone
while :; do
  wait "$pid"
  status=$?
  kill -0 "$pid" 2>/dev/null || break
done
printf '%s\n' "$status" > "$1/end.tmp" && mv -f "$1/end.tmp" "$1/end"
exit "$status"
