#pragma once
// The node side of a Slurm job (docs/execution.md): Slurm starts `crcrd --slurm-job <spec>` on
// the node it chose; crcrd reads the process it must run (argv inside the same sandbox as
// locally, exact environment, job directory, log cap, stall timeout, account) and supervises
// it there exactly as the local executor does, then writes what happened beside the spec for
// the daemon to collect. Its exit code is the command's.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crcrd/core/result.hpp"
#include "crcrd/exec/supervisor.hpp"

namespace crcrd::exec::slurm {

/// The spec file of a ProcessSpec (everything but on_start).
nlohmann::json spec_json(const ProcessSpec& p);
Result<ProcessSpec> spec_from_json(const nlohmann::json& j);

/// The result file of a ProcessResult, and back.
nlohmann::json result_json(const ProcessResult& r);
ProcessResult result_from_json(const nlohmann::json& j);

/// `<control>/result.json` for `<control>/spec.json`.
std::filesystem::path result_path_for(const std::filesystem::path& spec);

/// Runs the spec at `spec_path` to its end and writes its result file (atomically). Returns the
/// exit code for Slurm: the command's, 128 + a signal, or 70 when it could not start.
int run_node_job(const std::filesystem::path& spec_path);

}  // namespace crcrd::exec::slurm
