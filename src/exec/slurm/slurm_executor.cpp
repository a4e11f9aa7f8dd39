#include "crcrd/exec/slurm/slurm_executor.hpp"

#include <spdlog/spdlog.h>

#include <sstream>
#include <thread>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/exec/slurm/node_job.hpp"
#include "crcrd/exec/slurm/watch.hpp"

namespace crcrd::exec {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The batch script Slurm is given: it only execs its arguments (crcrd --slurm-job <spec>), so
// nothing of a job's data is ever shell text.
constexpr const char* k_script = "#!/bin/sh\nexec \"$@\"\n";
constexpr auto k_command_timeout = std::chrono::seconds(60);
// A job the controller and the completion file both say nothing of, this many looks running.
constexpr int k_gone_after = 10;
// Preemptions of one attempt submitted again before it ends infra_error.
constexpr int k_max_resubmits = 10;

Result<SubprocessResult> slurm_command(const std::vector<std::string>& argv) {
    SubprocessOptions o;
    o.timeout = k_command_timeout;
    o.max_output = 16 << 20;
    return run_subprocess(argv, o);
}

std::string tail_of(const std::filesystem::path& path, std::size_t n) {
    auto text = read_file(path, 64 << 20);
    if (!text) return {};
    auto t = trim(*text);
    return t.size() > n ? "…" + t.substr(t.size() - n) : t;
}

/// Job names, tier names: a comment has no spaces or commas of its own.
std::string comment_word(std::string s) {
    for (auto& c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
            c = '_';
    return s;
}

json external_of(const std::string& id, const std::optional<slurm::JobInfo>& info) {
    json e = {{"kind", "slurm"}, {"slurm_job_id", id}};
    if (info) {
        e["state"] = info->state;
        e["reason"] = info->reason;
        e["node"] = info->node;
        e["exit_code"] = info->exit_code;
    }
    return e;
}

std::string seconds(std::chrono::milliseconds d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

}  // namespace

SlurmExecutor::SlurmExecutor(std::shared_ptr<const ExecutorSettings> settings)
    : m_settings(std::move(settings)) {
    m_node_binary = self_executable();
}

void SlurmExecutor::set_settings(std::shared_ptr<const ExecutorSettings> settings) {
    std::lock_guard lk(m_mu);
    m_settings = std::move(settings);
}

std::shared_ptr<const ExecutorSettings> SlurmExecutor::settings() const {
    std::lock_guard lk(m_mu);
    return m_settings;
}

std::string SlurmExecutor::job_name(std::int64_t job_id) {
    return "crcrd-" + std::to_string(job_id);
}

std::vector<SlotOffer> SlurmExecutor::slots() const {
    auto s = settings();
    std::vector<SlotOffer> out;
    if (!s->execution.section<slurm::SlurmSection>()) return out;
    std::vector<std::string> labels;
    for (const auto& [label, gres] : s->execution.section<slurm::SlurmSection>()->gres_per_label)
        labels.push_back(label);
    for (std::uint32_t i = 1; i <= s->execution.section<slurm::SlurmSection>()->max_submitted; ++i)
        out.push_back(SlotOffer{"slurm-" + std::to_string(i), labels});
    // The build stage's (docs/build.md): build jobs in Slurm at once, on build.partition.
    if (s->build && s->build->section<slurm::SlurmBuildSection>()) {
        for (std::uint32_t i = 1; i <= s->build->slots; ++i)
            out.push_back(SlotOffer{k_build_slot_prefix + std::to_string(i), {}, true});
    }
    return out;
}

SlurmExecutor::Target SlurmExecutor::target_of(const ExecutorSettings& s, const JobToRun& job) {
    const auto& sl = *s.execution.section<slurm::SlurmSection>();
    const auto* b = s.build ? s.build->section<slurm::SlurmBuildSection>() : nullptr;
    if (job.build && b) return Target{b->partition, {}, b->sbatch_args, {}};
    return Target{sl.partition, slurm::gres_for(job.labels, sl.gres_per_label), sl.sbatch_args,
                  sl.devices};
}

Health SlurmExecutor::check_health(const std::string&) {
    return Health{true, std::chrono::system_clock::now(), std::nullopt,
                  "Slurm decides which nodes are healthy"};
}

SlurmExecutor::Paths SlurmExecutor::paths(const ExecutorSettings& s, std::int64_t job_id) const {
    Paths p;
    p.control = s.execution.section<slurm::SlurmSection>()->shared_root / "control" /
                std::to_string(job_id);
    p.spec = p.control / "spec.json";
    p.result = slurm::result_path_for(p.spec);
    p.slurm_out = p.control / "slurm.out";
    p.metadata = p.control / "metadata.json";
    return p;
}

ExecutorSettings SlurmExecutor::on_shared_root(const ExecutorSettings& s) {
    ExecutorSettings shared = s;
    shared.execution.work_root = s.execution.section<slurm::SlurmSection>()->shared_root;
    return shared;
}

Result<std::string> SlurmExecutor::submit(const ExecutorSettings& s, const JobToRun& job,
                                          const Paths& p, bool first) {
    const auto& sl = *s.execution.section<slurm::SlurmSection>();
    const auto script = sl.shared_root / "crcrd-slurm-job.sh";
    {
        // One writer at a time: write_file_atomic's temporary is `<script>.tmp` for everyone,
        // and concurrent first submissions (max_submitted workers at a start) raced on it: a
        // rename failed ("No such file or directory"), or sbatch could read a script another
        // worker was truncating and rewriting.
        std::lock_guard lk(m_script_mu);
        if (read_file(script, 4096).value_or("") != k_script) {
            if (auto w = write_file_atomic(script, k_script); !w) return w.error();
        }
    }
    const auto target = target_of(s, job);
    slurm::Submission sub;
    sub.partition = target.partition;
    sub.gres = target.gres;
    sub.timeout = job.timeout;
    sub.job_name = job_name(job.job_id);
    sub.comment = "crcrd:job=" + std::to_string(job.job_id) + ",run=" + std::to_string(job.run_id) +
                  ",tier=" + comment_word(job.tier) + ",attempt=" + std::to_string(job.attempt);
    sub.output = p.slurm_out.string();
    sub.chdir = p.control.string();
    sub.extra = target.sbatch_args;
    sub.script = script.string();
    sub.command = {sl.node_binary ? sl.node_binary->string() : m_node_binary, "--slurm-job",
                   p.spec.string()};
    auto r = slurm_command(slurm::sbatch_argv(sub));
    if (r && r->exit_code == 0) {
        if (auto id = slurm::parse_sbatch_id(r->out)) return *id;
    }
    // sbatch may have submitted before it failed (a timeout): never a second job for it. (A
    // resubmission looks for a live one by name instead, before it submits.)
    if (first) {
        if (auto found = adoptable(job.job_id, std::nullopt)) return *found;
    }
    std::string why = !r ? r.error().message : r->timed_out ? "timed out" : trim(r->err + r->out);
    return make_error(Errc::infra_error, "sbatch failed: " + why.substr(0, 500));
}

std::optional<slurm::JobInfo> SlurmExecutor::query(const std::string& id, bool* unreachable) {
    if (unreachable) *unreachable = false;
    auto r = slurm_command({"scontrol", "show", "job", "-o", id});
    if (r && r->exit_code == 0) {
        if (auto j = slurm::job_info(r->out.substr(0, r->out.find('\n')))) return j;
    }
    if (!r || (r->err.find("Invalid job id") == std::string::npos && r->exit_code != 0)) {
        // The controller did not answer (down, restarting): nobody can say the job is gone.
        if (unreachable) *unreachable = true;
        return std::nullopt;
    }
    // Gone from the controller's memory (MinJobAge): its completion record says how it ended.
    auto text = read_jobcomp();
    if (!text) return std::nullopt;
    return slurm::find_completion(*text, id);
}

std::optional<std::string> SlurmExecutor::read_jobcomp() {
    auto conf = slurm_command({"scontrol", "show", "config"});
    if (!conf || conf->exit_code != 0) return std::nullopt;
    std::string loc;
    std::istringstream in(conf->out);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("JobCompLoc", 0) == 0) {
            auto eq = line.find('=');
            if (eq != std::string::npos) loc = trim(line.substr(eq + 1));
        }
    }
    if (loc.empty() || loc.front() != '/') return std::nullopt;
    auto text = read_file(loc, 256 << 20);
    if (!text) return std::nullopt;
    return std::move(*text);
}

bool SlurmExecutor::scancel(const std::string& id) {
    for (int attempt = 1;; ++attempt) {
        auto r = slurm_command({"scancel", id});
        if (r && r->exit_code == 0) return true;
        spdlog::warn("slurm: scancel {} failed (try {} of 3): {}", id, attempt,
                     !r ? r.error().message : trim(r->err));
        if (attempt == 3) return false;
        std::this_thread::sleep_for(std::chrono::seconds(attempt));
    }
}

bool SlurmExecutor::detaching() {
    std::lock_guard lk(m_mu);
    return m_detaching;
}

bool SlurmExecutor::detach_on_stop() {
    {
        std::lock_guard lk(m_mu);
        m_detaching = true;
    }
    m_cv.notify_all();
    return true;
}

void SlurmExecutor::pause(std::chrono::milliseconds d, const std::atomic<bool>& cancel) {
    const auto until = Clock::now() + d;
    std::unique_lock lk(m_mu);
    while (!m_detaching && !cancel.load() && Clock::now() < until) {
        m_cv.wait_until(lk, std::min(until, Clock::now() + std::chrono::milliseconds(200)));
    }
}

void SlurmExecutor::wait_a_little(std::chrono::milliseconds poll, const std::atomic<bool>& cancel,
                                  bool cancel_sent) {
    // Once scancel was sent (or the daemon stops), pause() would not wait at all: look again
    // soon, not in a busy loop.
    if (cancel_sent || detaching()) {
        std::this_thread::sleep_for(std::min(poll, std::chrono::milliseconds(250)));
        return;
    }
    pause(poll, cancel);
}

RawOutcome SlurmExecutor::run(const JobToRun& job, const std::atomic<bool>& cancel,
                              const AttemptHooks& hooks) {
    auto base = settings();
    RawOutcome out;
    if (!base->execution.section<slurm::SlurmSection>()) {
        out.not_run = "execution.slurm is no longer configured";
        return out;
    }
    const auto s = on_shared_root(*base);
    const auto& sl = *s.execution.section<slurm::SlurmSection>();
    const auto target = target_of(s, job);
    auto a = prepare_attempt(s, job, SlotSpec{job.slot, {}, target.devices, std::nullopt},
                             sl.shared_root / "logs");
    if (!a) {
        out.not_run = a.error().message;
        return out;
    }
    // Slurm's --time ends the job; the node's own deadline is only a backstop behind it.
    a->process.timeout = job.timeout + std::chrono::minutes(2);
    a->metadata["executor"] = "slurm";
    a->metadata["partition"] = target.partition;
    const auto p = paths(s, job.job_id);
    std::error_code ec;
    std::filesystem::remove_all(p.control, ec);
    std::filesystem::create_directories(p.control, ec);
    auto written = ec ? Status(make_error(
                            Errc::io, "cannot create " + p.control.string() + ": " + ec.message()))
                      : write_file_atomic(p.spec, slurm::spec_json(a->process).dump());
    if (written) written = write_file_atomic(p.metadata, a->metadata.dump());
    // The job was cancelled since its lease: nothing is submitted.
    if (written && (cancel.load() || !hooks.may_start())) {
        out.not_started = true;
        release_workspace(a->ws, s.execution, s.upstream, false);
        std::filesystem::remove_all(p.control, ec);
        return out;
    }
    auto id = written ? submit(s, job, p, true) : Result<std::string>(written.error());
    if (!id) {
        out.not_run = id.error().message;
        out.metadata = a->metadata;
        release_workspace(a->ws, s.execution, s.upstream, true);
        return out;
    }
    spdlog::info("job_id={} submitted to Slurm as job {} (partition {})", job.job_id, *id,
                 target.partition);
    hooks.on_running(Started{0, *id});
    return watch(s, job, *a, *id, cancel, hooks.on_running);
}

std::optional<std::string> SlurmExecutor::adoptable(std::int64_t job_id,
                                                    const std::optional<std::string>& external_id) {
    if (external_id) {
        // Kept when the controller cannot tell now: watching it will.
        bool unreachable = false;
        if (query(*external_id, &unreachable) || unreachable) return external_id;
        return std::nullopt;
    }
    // Submitted, but the daemon died before it stored the id: found by the job's name.
    auto r = slurm_command(
        {"squeue", "--noheader", "--states=all", "--name=" + job_name(job_id), "--format=%i"});
    if (r && r->exit_code == 0) {
        if (auto id = slurm::parse_sbatch_id(r->out)) return id;
    }
    // It may have ended and left the controller already: the completion file still names it.
    if (auto text = read_jobcomp()) {
        if (auto j = slurm::find_completion_by_name(*text, job_name(job_id))) return j->id;
    }
    return std::nullopt;
}

RawOutcome SlurmExecutor::adopt(const JobToRun& job, const std::string& external_id,
                                const std::atomic<bool>& cancel, const AttemptHooks& hooks) {
    auto base = settings();
    if (!base->execution.section<slurm::SlurmSection>()) {
        RawOutcome out;
        out.not_run = "execution.slurm is no longer configured";
        return out;
    }
    const auto s = on_shared_root(*base);
    const auto& sl = *s.execution.section<slurm::SlurmSection>();
    // The attempt's files, where run() of the previous daemon put them.
    PreparedAttempt a;
    a.ws.job_dir = sl.shared_root / "jobs" / std::to_string(job.job_id);
    if (!s.upstream.mirror.empty())
        a.ws.checkout = sl.shared_root / "checkouts" / std::to_string(job.job_id);
    a.ctx.job_dir = a.ws.job_dir;
    a.ctx.junit_dir = a.ws.job_dir / "junit";
    a.process.log_path = sl.shared_root / "logs" / (std::to_string(job.job_id) + ".log");
    const auto p = paths(s, job.job_id);
    auto meta = read_file(p.metadata, 1 << 20);
    a.metadata = meta ? json::parse(*meta, nullptr, false) : json::object();
    if (!a.metadata.is_object()) a.metadata = json::object();
    a.metadata["adopted"] = true;
    spdlog::info("job_id={} adopted Slurm job {} from the previous daemon", job.job_id,
                 external_id);
    return watch(s, job, a, external_id, cancel, hooks.on_running);
}

std::optional<slurm::JobInfo> SlurmExecutor::look(const std::string& id, const Paths& p,
                                                  const std::string& name, bool* unreachable) {
    auto info = query(id, unreachable);
    if (info || *unreachable || !std::filesystem::exists(p.result)) return info;
    // Gone from the controller, and its completion file is not readable here: the node's result
    // says the command ran to its end.
    auto r = read_file(p.result, 1 << 20);
    auto j = r ? json::parse(*r, nullptr, false) : json();
    if (!j.is_object()) return std::nullopt;
    const auto res = slurm::result_from_json(j);
    return slurm::JobInfo{
        id, res.exit_code == 0 ? "COMPLETED" : "FAILED", "LeftTheController", "", "", name};
}

Result<std::string> SlurmExecutor::resubmit(const ExecutorSettings& s, const JobToRun& job,
                                            const PreparedAttempt& a, const std::string& id) {
    // A resubmission a previous daemon made (and died before storing) is taken over.
    if (auto live = live_by_name(job.job_id, id)) {
        spdlog::warn("job_id={} Slurm job {} was preempted; {} already runs it again", job.job_id,
                     id, *live);
        return *live;
    }
    const auto p = paths(s, job.job_id);
    std::error_code ec;
    std::filesystem::remove(p.result, ec);
    // What the preempted run wrote is not this run's.
    for (auto it = std::filesystem::directory_iterator(a.ctx.junit_dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        std::error_code ignored;
        std::filesystem::remove_all(it->path(), ignored);
    }
    auto next = submit(s, job, p, false);
    if (!next) {
        return make_error(Errc::slurm,
                          "Slurm preempted job " + id +
                              ", and submitting it again failed: " + next.error().message);
    }
    spdlog::warn("job_id={} Slurm job {} was preempted: submitted again as {}", job.job_id, id,
                 *next);
    return next;
}

void SlurmExecutor::cancel_waiting(const std::string& id) {
    // Ended in Slurm before crcrd lets go: it must not start later on a removed workspace.
    if (!scancel(id)) return;
    for (int i = 0; i < 40; ++i) {
        auto now = query(id);
        if (now && slurm::phase_of(now->state) != slurm::Phase::waiting &&
            slurm::phase_of(now->state) != slurm::Phase::running) {
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
}

RawOutcome SlurmExecutor::watch(const ExecutorSettings& s, const JobToRun& job,
                                const PreparedAttempt& a, std::string id,
                                const std::atomic<bool>& cancel,
                                const std::function<void(const Started&)>& on_running) {
    const auto& sl = *s.execution.section<slurm::SlurmSection>();
    const auto p = paths(s, job.job_id);
    const slurm::WatchPolicy policy{sl.cancel_pending_on_stop, s.execution.device_wait,
                                    k_gone_after, k_max_resubmits};
    slurm::WatchState st;
    st.id = std::move(id);
    st.pending_since = Clock::now();
    RawOutcome out;
    out.log_path = a.process.log_path.string();
    auto end_early = [&](RawOutcome& o) {
        o.external = external_of(st.id, st.last);
        o.metadata = a.metadata;
        o.metadata["slurm"] = o.external;
        release_workspace(a.ws, s.execution, s.upstream, true);
        return o;
    };
    for (;;) {
        slurm::Observation seen{Clock::now(), cancel.load(), detaching(),
                                false,        std::nullopt,  false};
        auto act = slurm::next(st, seen, policy);
        if (act.step == slurm::WatchStep::look) {
            seen.looked = true;
            seen.info = look(st.id, p, job_name(job.job_id), &seen.unreachable);
            seen.now = Clock::now();
            act = slurm::next(st, seen, policy);
        }
        switch (act.step) {
            case slurm::WatchStep::look:
                continue;
            case slurm::WatchStep::cancel:
                scancel(st.id);
                continue;
            case slurm::WatchStep::wait:
                if (seen.unreachable)
                    spdlog::warn("job_id={} Slurm's controller did not answer about job {}",
                                 job.job_id, st.id);
                wait_a_little(sl.poll_interval, cancel, st.cancel_sent);
                continue;
            case slurm::WatchStep::detach:
                out.detached = true;
                out.external = external_of(st.id, st.last);
                return out;
            case slurm::WatchStep::give_up:
                out.cancelled = act.cancelled;
                out.infra_failure = act.reason;
                return end_early(out);
            case slurm::WatchStep::device_unavailable:
                cancel_waiting(st.id);
                out.device_unavailable =
                    "Slurm job " + st.id + " still pending (" + st.last->reason + ") after " +
                    seconds(std::chrono::duration_cast<std::chrono::milliseconds>(
                        s.execution.device_wait)) +
                    " in partition " + target_of(s, job).partition;
                return end_early(out);
            case slurm::WatchStep::resubmit: {
                auto next = resubmit(s, job, a, st.id);
                if (!next) {
                    out.infra_failure = next.error().message;
                    return end_early(out);
                }
                slurm::follow(st, *next, Clock::now());
                on_running(Started{0, st.id});
                continue;
            }
            case slurm::WatchStep::ended:
                break;
        }
        break;
    }
    collect_ended(s, job, a, st, out);
    return out;
}

void SlurmExecutor::collect_ended(const ExecutorSettings& s, const JobToRun& job,
                                  const PreparedAttempt& a, const slurm::WatchState& st,
                                  RawOutcome& out) {
    // It ended: what the node wrote decides with what Slurm says.
    const auto p = paths(s, job.job_id);
    ProcessResult proc;
    bool have_result = false;
    if (auto text = read_file(p.result, 1 << 20)) {
        auto j = json::parse(*text, nullptr, false);
        if (j.is_object()) {
            proc = slurm::result_from_json(j);
            have_result = true;
        }
    }
    const auto& info = *st.last;
    const std::string& id = st.id;
    const std::string where = info.node.empty() ? std::string() : " on " + info.node;
    switch (slurm::phase_of(info.state)) {
        case slurm::Phase::finished:
            if (!have_result) {
                out.infra_failure =
                    "Slurm job " + id + " ended " + info.state + " (exit " + info.exit_code + ")" +
                    where + " without crcrd's result; its output: " + tail_of(p.slurm_out, 400);
            }
            break;
        case slurm::Phase::timed_out:
            out.timed_out = true;
            break;
        case slurm::Phase::cancelled:
            if (!st.cancel_sent)
                out.infra_failure = "Slurm job " + id + " was cancelled outside crcrd" + where;
            break;
        default:
            out.infra_failure = "Slurm ended job " + id + " " + info.state + where;
            break;
    }
    collect_attempt(s, a, proc, st.cancel_sent, out);
    out.external = external_of(id, st.last);
    out.metadata["slurm"] = out.external;
    // The control folder goes with the workspace (kept with it for a look after a failure).
    std::error_code ec;
    if (!std::filesystem::exists(a.ws.job_dir, ec)) std::filesystem::remove_all(p.control, ec);
}

std::optional<std::string> SlurmExecutor::live_by_name(std::int64_t job_id,
                                                       const std::string& except) {
    auto r = slurm_command({"squeue", "--noheader", "--name=" + job_name(job_id), "--format=%i"});
    if (!r || r->exit_code != 0) return std::nullopt;
    std::istringstream in(r->out);
    for (std::string line; std::getline(in, line);) {
        auto id = slurm::parse_sbatch_id(line);
        if (id && *id != except) return id;
    }
    return std::nullopt;
}

int SlurmExecutor::abandon(std::int64_t) {
    // Only what adoptable() did not find comes here: nothing of it is left in Slurm.
    return 0;
}

json SlurmExecutor::cluster() {
    auto s = settings();
    const auto* sl = s->execution.section<slurm::SlurmSection>();
    if (!sl) return nullptr;
    json c = {{"executor", "slurm"},
              {"partition", sl->partition},
              {"title", "Slurm partition " + sl->partition},
              {"columns", json::array({{{"field", "name"}, {"header", "NODE"}},
                                       {{"field", "state"}, {"header", "STATE"}},
                                       {{"field", "gres"}, {"header", "GRES"}},
                                       {{"field", "gres_used"}, {"header", "GRES USED"}},
                                       {{"field", "reason"}, {"header", "REASON"}}})},
              {"rows", json::array()},
              {"error", nullptr}};
    auto r = slurm_command(slurm::sinfo_nodes_argv(sl->partition));
    if (!r || r->exit_code != 0) {
        c["error"] = !r ? r.error().message : trim(r->err).substr(0, 300);
        return c;
    }
    c["rows"] = slurm::nodes_of(r->out);
    return c;
}

}  // namespace crcrd::exec
