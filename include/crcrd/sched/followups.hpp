#pragma once
// What a finished run leaves for the planner's thread (the `followups` table, filled in the
// transaction that ends the run with what followups_after() names; docs/verdicts.md): a trunk
// regression to place in a range and bisect (docs/verdicts.md), a bisect run whose result moves its
// bisection on, a full-matrix failure to audit for selection misses (docs/verdicts.md). They need
// the mirror (git), so they run beside planning, never on the writer's thread. What one reads comes
// from one writer item; its writes are another, which also deletes the followup, so a crash redoes
// it, never half of it.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "crcrd/config/config.hpp"
#include "crcrd/core/result.hpp"
#include "crcrd/core/vocab.hpp"
#include "crcrd/select/changed_paths.hpp"
#include "crcrd/select/rules.hpp"
#include "crcrd/store/writer.hpp"

namespace crcrd::sched {

struct FollowupContext {
    store::Writer& writer;
    std::filesystem::path db_path;  // read-only connections for the reads
    const select::Rules& rules;  // the rules that would match a commit's paths (docs/verdicts.md)
    const select::SourceSettings& sources;  // sources.upstream: the mirror
    const config::BisectConfig& bisect;
};

/// The planner's thread's followups. One that fails (git unreachable) stays and is tried again
/// after a growing pause (15 s doubling, at most 10 min), logged each time; at the last of
/// k_followup_tries a bisection ends `failed` with git's message, and any other followup is
/// dropped with an error in the log.
class Followups {
  public:
    static constexpr int k_followup_tries = 8;
    /// Handles every pending followup that is due once, oldest run first; returns how many it
    /// finished.
    std::size_t handle(const FollowupContext& ctx);

  private:
    struct Failure {
        int tries = 0;
        std::chrono::steady_clock::time_point next;
    };
    std::map<std::pair<std::int64_t, FollowupKind>, Failure> m_failures;
};

}  // namespace crcrd::sched
