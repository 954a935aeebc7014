-- Loaded by every Flux shell of a job of hpcjobs' Flux executor (the `userrc` shell
-- option, src/hpcjobs/executors/flux/jobspec.py), before any task starts: fail the job,
-- saying which path, when the shell cannot enter the job's working directory or the
-- directory of its output files. Flux's shell would otherwise run the tasks in /tmp
-- (flux-core 0.88 logs a warning; Slurm's slurmstepd does the same), where a job asked
-- to run elsewhere must not run at all, or fail naming no path ("shell_init: No such
-- file or directory"). `cd` in a POSIX shell is the test: it asks exactly what entering
-- a directory needs (search permission, not read).
local function sh_quote (s)
    return "'" .. (string.gsub (s, "'", "'\\''")) .. "'"
end

local function enters (dir)
    local status = os.execute ("cd -- " .. sh_quote (dir) .. " 2>/dev/null")
    return status == true or status == 0
end

local system = shell.info.jobspec.attributes.system
local cwd = system.cwd
if cwd and not enters (cwd) then
    local handle, err = io.open (cwd, "r")  -- for the reason: "<path>: <strerror>"
    if handle then
        handle:close ()
        err = "not a directory, or not searchable"
    elseif string.sub (err, 1, #cwd + 2) == cwd .. ": " then
        err = string.sub (err, #cwd + 3)
    end
    shell.die ("cannot use the job's directory " .. cwd .. ": " .. tostring (err))
end

local output = system.shell and system.shell.options and system.shell.options.output
for _, stream in ipairs ({"stdout", "stderr"}) do
    local path = output and output[stream] and output[stream].path
    local dir = path and string.match (path, "^(.*)/[^/]*$")
    if dir and not enters (dir == "" and "/" or dir) then
        shell.die ("cannot use the job's " .. stream .. " file " .. path .. ": its directory "
                   .. dir .. " does not exist or cannot be entered")
    end
end
