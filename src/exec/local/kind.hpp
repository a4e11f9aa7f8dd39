#pragma once
// The local executor as the registry knows it (exec/registry.hpp).

#include "crcrd/exec/registry.hpp"

namespace crcrd::exec::local {

/// Slots from `runners:` on this host, workspaces under `execution.work_root`; no keys of
/// its own.
ExecutorKind kind();

}  // namespace crcrd::exec::local
