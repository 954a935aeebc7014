-- Loaded by every Flux shell of a job of hpcjobs' Flux executor (the `userrc` shell
-- option, src/hpcjobs/executors/flux/jobspec.py): fail the job when the shell cannot
-- enter the job's working directory. Flux's shell would otherwise log a warning and run
-- the tasks in /tmp (flux-core 0.88; Slurm's slurmstepd does the same), where a job
-- asked to run elsewhere must not run at all. `cd` in a POSIX shell is the test: it asks
-- exactly what entering the directory needs (search permission, not read).
local cwd = shell.info.jobspec.attributes.system.cwd
if cwd then
    local quoted = "'" .. (string.gsub(cwd, "'", "'\\''")) .. "'"
    local status = os.execute("cd -- " .. quoted .. " 2>/dev/null")
    if status ~= true and status ~= 0 then
        local handle, err = io.open(cwd, "r")  -- for the reason: "<path>: <strerror>"
        if handle then
            handle:close()
            err = "not a directory, or not searchable"
        elseif string.sub(err, 1, #cwd + 2) == cwd .. ": " then
            err = string.sub(err, #cwd + 3)
        end
        shell.die("cannot use the job's directory " .. cwd .. ": " .. tostring(err))
    end
end
