#pragma once
// The Slurm executor as the registry knows it (exec/registry.hpp).

#include "crcrd/exec/registry.hpp"

namespace crcrd::exec::slurm {

/// `execution.slurm`, the host's Slurm commands and partition (--check-config), the shared
/// root hidden from jobs, and `crcrd --slurm-job SPEC` on the nodes.
ExecutorKind kind();

}  // namespace crcrd::exec::slurm
