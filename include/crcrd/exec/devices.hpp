#pragma once
// Who holds a slot's devices (docs/execution.md): after a stall or a timeout a slot is leased
// again only once no process has any of its devices open, found through /proc/*/fd.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace crcrd::exec {

struct DeviceHolder {
    pid_t pid = 0;
    std::string command;  // /proc/<pid>/comm
    std::string device;   // the configured path it holds
};

/// The first process that has one of `devices` open (the same character device, or the same
/// file), or nullopt when none does. Devices that do not exist are skipped. Never throws.
std::optional<DeviceHolder> device_holder(const std::vector<std::string>& devices);

/// "device D is held by pid P (comm)".
std::string describe(const DeviceHolder& h);

}  // namespace crcrd::exec
