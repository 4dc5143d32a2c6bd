// What the launcher's environment says about this process, read before any World exists: whether
// a launcher started it, and how many processes it started.
#pragma once

namespace initrt::init {

// Whether a launcher (mpirun, srun, hydra) started this process as part of a job.
bool startedByLauncher();

// The number of processes the launcher started: 1 without a launcher, 0 when a launcher did
// not say (MPI then tells).
long launcherSize();

} // namespace initrt::init
