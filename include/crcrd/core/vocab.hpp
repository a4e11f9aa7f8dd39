#pragma once
// The words crcrd's states, classes and sinks are spelt with, in one place (docs/selection.md,
// docs/execution.md, docs/verdicts.md, docs/reporting.md). Each enum's names are the exact texts
// the database's CHECK constraints, the admin API, the statuses, the callbacks and the logs use;
// the enumerators are listed in the order the admin API's error messages list them. Header-only
// and constexpr: classify, exec and select use it without storage.

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace crcrd {

/// The name of a run's build stage (docs/build.md): its job's tier, its status context's suffix
/// (`<prefix>/build`), its callbacks' job_name. No tier of the rules file may take it.
inline constexpr std::string_view k_build_stage = "build";
/// A build's state (builds.state, docs/build.md).
enum class BuildState { queued, running, ready, failed, evicted };

/// A run's state (runs.state).
enum class RunState { queued, running, completed, cancelled };
/// A job's (one attempt of a tier) state (jobs.state).
enum class JobState { queued, leased, running, completed, cancelled };
/// A class of a job or run (docs/verdicts.md) (jobs.conclusion, runs.conclusion). `pre_existing`: a
/// PR's failures that fail on its base too (docs/verdicts.md).
enum class Conclusion {
    passed,
    flaky,
    regression,
    infra_error,
    device_unavailable,
    timeout,
    cancelled,
    pre_existing
};
/// What queued a run (runs.event).
enum class RunEvent { pull_request, push, schedule, manual, bisect };
/// What ingest decided about a webhook delivery (deliveries.verdict).
enum class Verdict { queued, duplicate, ignored, cancelled, pong, rejected };
/// Where an outbox row goes (outbox.sink).
enum class Sink { github, file, callback };
/// Where an outbox row is in its delivery (outbox.delivery).
enum class OutboxDelivery { waiting, sent, dead, coalesced };
/// A runner slot's stored state (slots.state); "drained" is a display state, see display_state().
enum class SlotState { idle, busy, offline };
/// One test's outcome in an attempt (test_results.outcome, the JUnit parser's result).
enum class TestOutcome { passed, failed, skipped, flaky };
/// Work a finished run leaves for the planner's follow-ups (followups.kind): bisect a trunk
/// regression, move a bisection on after one of its runs, audit a scheduled run's failures.
enum class FollowupKind { bisect, bisect_step, audit };
/// A bisection's state (bisections.state, docs/verdicts.md): running, or how it ended.
enum class BisectionState {
    running,
    found,
    range,
    budget_spent,
    inconclusive,
    no_good,
    cancelled,
    failed
};
/// A GitHub commit status's state (outbox.state of a `github` row).
enum class GithubState { pending, success, failure, error };

/// The names of enum E, indexed by enumerator value; specialised for each enum above only.
template <class E>
struct Vocab;

template <>
struct Vocab<RunState> {
    static constexpr std::array<std::string_view, 4> names{"queued", "running", "completed",
                                                           "cancelled"};
};
template <>
struct Vocab<JobState> {
    static constexpr std::array<std::string_view, 5> names{"queued", "leased", "running",
                                                           "completed", "cancelled"};
};
template <>
struct Vocab<BuildState> {
    static constexpr std::array<std::string_view, 5> names{"queued", "running", "ready", "failed",
                                                           "evicted"};
};
template <>
struct Vocab<Conclusion> {
    static constexpr std::array<std::string_view, 8> names{
        "passed",  "flaky",     "regression",  "infra_error", "device_unavailable",
        "timeout", "cancelled", "pre_existing"};
};
template <>
struct Vocab<RunEvent> {
    static constexpr std::array<std::string_view, 5> names{"pull_request", "push", "schedule",
                                                           "manual", "bisect"};
};
template <>
struct Vocab<Verdict> {
    static constexpr std::array<std::string_view, 6> names{"queued",    "duplicate", "ignored",
                                                           "cancelled", "pong",      "rejected"};
};
template <>
struct Vocab<Sink> {
    static constexpr std::array<std::string_view, 3> names{"github", "file", "callback"};
};
template <>
struct Vocab<OutboxDelivery> {
    static constexpr std::array<std::string_view, 4> names{"waiting", "sent", "dead", "coalesced"};
};
template <>
struct Vocab<SlotState> {
    static constexpr std::array<std::string_view, 3> names{"idle", "busy", "offline"};
};
template <>
struct Vocab<TestOutcome> {
    static constexpr std::array<std::string_view, 4> names{"passed", "failed", "skipped", "flaky"};
};
template <>
struct Vocab<FollowupKind> {
    static constexpr std::array<std::string_view, 3> names{"bisect", "bisect_step", "audit"};
};
template <>
struct Vocab<BisectionState> {
    static constexpr std::array<std::string_view, 8> names{
        "running",      "found",   "range",     "budget_spent",
        "inconclusive", "no_good", "cancelled", "failed"};
};
template <>
struct Vocab<GithubState> {
    static constexpr std::array<std::string_view, 4> names{"pending", "success", "failure",
                                                           "error"};
};

/// Every name of E in enumerator order (the order admin error messages list them); static storage.
template <class E>
constexpr const auto& names() {
    return Vocab<E>::names;
}

/// The name of `e` as the database and the wire spell it; a view of static storage, never empty.
template <class E>
constexpr std::string_view to_string(E e) {
    return Vocab<E>::names[static_cast<std::size_t>(e)];
}

/// The enumerator spelt exactly `text` (case-sensitive); nullopt for any other text.
template <class E>
constexpr std::optional<E> from_string(std::string_view text) {
    const auto& n = Vocab<E>::names;
    for (std::size_t i = 0; i < n.size(); ++i)
        if (n[i] == text) return static_cast<E>(i);
    return std::nullopt;
}

/// A run that has not ended: queued or running.
constexpr bool is_open(RunState s) {
    return s == RunState::queued || s == RunState::running;
}

/// A job that has not ended: queued, leased or running.
constexpr bool is_open(JobState s) {
    return s == JobState::queued || s == JobState::leased || s == JobState::running;
}

/// A class that lets the next tier start and reports success: passed, flaky, or pre_existing
/// (the failing tests fail on the base too: not this change's doing, docs/verdicts.md).
constexpr bool is_pass(Conclusion c) {
    return c == Conclusion::passed || c == Conclusion::flaky || c == Conclusion::pre_existing;
}

/// An infrastructure-class failure, retried while attempts remain: infra_error or
/// device_unavailable.
constexpr bool is_infra(Conclusion c) {
    return c == Conclusion::infra_error || c == Conclusion::device_unavailable;
}

/// A class's rank when a run takes its most severe tier's class; lower is more severe
/// (docs/verdicts.md): regression 0, infra_error 1, device_unavailable 2, timeout 3, pre_existing
/// 4, flaky 5, passed 6, and cancelled 7 (it never outranks a tier that ended otherwise).
constexpr int severity(Conclusion c) {
    switch (c) {
        case Conclusion::regression:
            return 0;
        case Conclusion::infra_error:
            return 1;
        case Conclusion::device_unavailable:
            return 2;
        case Conclusion::timeout:
            return 3;
        case Conclusion::pre_existing:
            return 4;
        case Conclusion::flaky:
            return 5;
        case Conclusion::passed:
            return 6;
        case Conclusion::cancelled:
            return 7;
    }
    return 7;
}

/// The follow-ups a run leaves when it ends `ended` (completed or cancelled) with
/// `conclusion` (docs/verdicts.md): a trunk run (push, schedule) that ended a regression is
/// bisected, a scheduled one also audited for selection misses; every bisect run that ended
/// moves its bisection on. None for anything else.
inline std::vector<FollowupKind> followups_after(RunEvent event, RunState ended,
                                                 Conclusion conclusion) {
    std::vector<FollowupKind> out;
    if (event == RunEvent::bisect) {
        if (ended == RunState::completed || ended == RunState::cancelled)
            out.push_back(FollowupKind::bisect_step);
        return out;
    }
    if (ended != RunState::completed || conclusion != Conclusion::regression) return out;
    if (event == RunEvent::push || event == RunEvent::schedule) out.push_back(FollowupKind::bisect);
    if (event == RunEvent::schedule) out.push_back(FollowupKind::audit);
    return out;
}

/// E's names joined with `sep`, in enumerator order ("a | b | c"): what an error message or a
/// usage line lists.
template <class E>
std::string joined_names(std::string_view sep) {
    std::string out;
    for (std::string_view n : names<E>()) {
        if (!out.empty()) out += sep;
        out += n;
    }
    return out;
}

/// Declares, in the enum's namespace, how nlohmann::json writes and reads enum E: by its name.
/// Without it, json would silently store the enumerator's number. (A template over the json
/// type, so that this header needs no json include; found by argument-dependent lookup.)
#define CRCRD_VOCAB_JSON(E)                                                       \
    template <class BasicJsonType>                                                \
    void to_json(BasicJsonType& j, E e) {                                         \
        j = std::string(::crcrd::to_string(e));                                   \
    }                                                                             \
    template <class BasicJsonType>                                                \
    void from_json(const BasicJsonType& j, E& e) {                                \
        const auto v = ::crcrd::from_string<E>(j.template get<std::string>());    \
        if (!v) throw std::invalid_argument("not a name of " #E ": " + j.dump()); \
        e = *v;                                                                   \
    }

CRCRD_VOCAB_JSON(RunState)
CRCRD_VOCAB_JSON(JobState)
CRCRD_VOCAB_JSON(Conclusion)
CRCRD_VOCAB_JSON(RunEvent)
CRCRD_VOCAB_JSON(Verdict)
CRCRD_VOCAB_JSON(Sink)
CRCRD_VOCAB_JSON(OutboxDelivery)
CRCRD_VOCAB_JSON(SlotState)
CRCRD_VOCAB_JSON(TestOutcome)
CRCRD_VOCAB_JSON(FollowupKind)
CRCRD_VOCAB_JSON(BisectionState)
CRCRD_VOCAB_JSON(GithubState)

/// A slot's state as the admin API and the dashboard show it: "drained" for an idle slot whose
/// drain flag is set, else the stored state's name.
constexpr std::string_view display_state(SlotState s, bool drained) {
    return drained && s == SlotState::idle ? std::string_view("drained") : to_string(s);
}

}  // namespace crcrd
