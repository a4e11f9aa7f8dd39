#pragma once
// One crcrd per database (docs/execution.md): an exclusive flock on "<database>.lock", taken
// before the daemon touches a job, a slot or a process, held for the daemon's life.

#include <filesystem>
#include <memory>

#include "crcrd/core/result.hpp"

namespace crcrd::store {

class InstanceLock {
  public:
    /// Takes the lock beside `db_path` (creating the file, 0600, with this process's pid in
    /// it). Error code "locked" with "another crcrd holds <path> (pid N)" when another process
    /// has it; "io" when the file cannot be opened. Never blocks.
    static Result<std::unique_ptr<InstanceLock>> acquire(const std::filesystem::path& db_path);
    ~InstanceLock();
    InstanceLock(const InstanceLock&) = delete;
    InstanceLock& operator=(const InstanceLock&) = delete;

    const std::filesystem::path& path() const { return m_path; }

  private:
    InstanceLock(int fd, std::filesystem::path path) : m_fd(fd), m_path(std::move(path)) {}
    int m_fd;
    std::filesystem::path m_path;
};

}  // namespace crcrd::store
