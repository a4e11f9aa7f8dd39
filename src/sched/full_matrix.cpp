#include "crcrd/sched/full_matrix.hpp"

#include <spdlog/spdlog.h>

#include <stdexcept>

#include "crcrd/core/time.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/meta.hpp"

namespace crcrd::sched {

namespace {

using std::chrono::system_clock;

/// meta rows: full_matrix_schedule (the expression the next time belongs to) and
/// full_matrix_next (Unix seconds).
struct Recorded {
    std::string schedule;
    std::optional<std::int64_t> next;
};

/// A failed read throws, for the planner's loop to log (an unreadable database: the next
/// wake-up tries again).
Recorded read_recorded(const std::filesystem::path& path) {
    auto meta = store::read_full_matrix_meta(path);
    if (!meta) throw std::runtime_error(meta.error().message);
    Recorded r;
    if (meta->schedule) r.schedule = *meta->schedule;
    if (meta->next) r.next = std::stoll(*meta->next);
    return r;
}

std::int64_t unix_seconds(system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

FullMatrixTrigger::FullMatrixTrigger(store::Writer& writer, std::filesystem::path db_path,
                                     NewestSha newest_sha, Clock clock)
    : m_writer(writer),
      m_db_path(std::move(db_path)),
      m_newest_sha(std::move(newest_sha)),
      m_clock(std::move(clock)) {}

std::optional<std::int64_t> FullMatrixTrigger::tick(const select::Rules& rules) {
    if (!rules.full_matrix) return std::nullopt;
    const auto& fm = *rules.full_matrix;
    const auto now = m_clock();
    // Only this trigger writes the two rows, so what it read or wrote last is what they hold:
    // the planner's wake-ups (one per burst of webhooks) read nothing until the time comes.
    if (m_known_next && m_known_schedule == fm.schedule.text() && unix_seconds(now) < *m_known_next)
        return std::nullopt;
    const auto rec = read_recorded(m_db_path);
    const std::int64_t next_slot = unix_seconds(fm.schedule.next_after(now));
    const std::string next_after_now = std::to_string(next_slot);
    auto remember = [&](const std::string& schedule, std::optional<std::int64_t> next) {
        m_known_schedule = schedule;
        m_known_next = next;
    };

    if (!rec.next || rec.schedule != fm.schedule.text()) {
        auto s = m_writer.run_sync([&](store::Db& db) {
            store::put_meta(db, "full_matrix_schedule", fm.schedule.text());
            store::put_meta(db, "full_matrix_next", next_after_now);
        });
        if (!s)
            spdlog::warn("full matrix: cannot record the schedule: {}", s.error().message);
        else
            remember(fm.schedule.text(), next_slot);
        return std::nullopt;
    }
    remember(rec.schedule, rec.next);
    if (unix_seconds(now) < *rec.next) return std::nullopt;

    const auto slot = system_clock::time_point(std::chrono::seconds(*rec.next));
    auto sha = m_newest_sha(fm.ref);
    std::optional<std::int64_t> run_id;
    auto s = m_writer.run_sync([&](store::Db& db) {
        if (sha) {
            store::NewRun r;
            r.event = RunEvent::schedule;
            r.action = "full_matrix";
            r.sha = *sha;
            r.ref = "refs/heads/" + fm.ref;
            r.delivery_id = "schedule:" + rfc3339(slot);
            r.inputs_json = R"({"form":"schedule"})";
            r.concurrency_group = "schedule";
            run_id = store::insert_run(db, r, std::chrono::system_clock::now());
        }
        // The next slot after now: slots missed while the daemon was down collapse into this one.
        store::put_meta(db, "full_matrix_next", next_after_now);
    });
    if (s) remember(rec.schedule, next_slot);
    if (!sha) {
        spdlog::error("full matrix: slot {} skipped: cannot resolve {}: {}", rfc3339(slot), fm.ref,
                      sha.error().message);
        return std::nullopt;
    }
    if (!s) {
        spdlog::error("full matrix: cannot store the run: {}", s.error().message);
        return std::nullopt;
    }
    spdlog::info("full matrix: run_id={} sha={} ref={} slot={}", *run_id, *sha, fm.ref,
                 rfc3339(slot));
    return run_id;
}

}  // namespace crcrd::sched
