#include "crcrd/exec/local/local_executor.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "crcrd/core/files.hpp"
#include "crcrd/core/subprocess.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/core/units.hpp"
#include "crcrd/exec/devices.hpp"
#include "crcrd/exec/supervisor.hpp"
#include "crcrd/exec/workspace.hpp"

namespace crcrd::exec {

using nlohmann::json;

LocalExecutor::LocalExecutor(std::shared_ptr<const LocalSettings> settings)
    : m_settings(std::move(settings)) {}

void LocalExecutor::set_settings(std::shared_ptr<const LocalSettings> settings) {
    std::lock_guard lk(m_mu);
    m_settings = std::move(settings);
}

std::shared_ptr<const LocalSettings> LocalExecutor::settings() const {
    std::lock_guard lk(m_mu);
    return m_settings;
}

bool LocalExecutor::is_build_slot(const LocalSettings& s, const std::string& name) {
    if (!s.build || name.rfind(k_build_slot_prefix, 0) != 0) return false;
    const std::string n = name.substr(std::string_view(k_build_slot_prefix).size());
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9)
        return false;
    const auto i = std::stoul(n);
    return i >= 1 && i <= s.build->slots;
}

const config::RunnerConfig* LocalExecutor::runner(const LocalSettings& s,
                                                  const std::string& name) const {
    for (const auto& r : s.runners)
        if (r.name == name) return &r;
    return nullptr;
}

Health LocalExecutor::health_check(const config::RunnerConfig& r) {
    Health h{true, std::chrono::system_clock::now(), std::nullopt, ""};
    if (r.health_check.empty()) return h;
    SubprocessOptions o;
    o.timeout = std::chrono::seconds(60);
    o.max_output = 4096;
    auto res = run_subprocess(r.health_check, o);
    if (!res) {
        h.ok = false;
        h.output = res.error().message;
        return h;
    }
    h.ok = res->exit_code == 0 && !res->timed_out;
    h.exit_status = res->exit_code;
    h.output = trim(res->out + res->err).substr(0, 1000);
    return h;
}

Health LocalExecutor::slot_health(const config::RunnerConfig& r) {
    // A slot that went offline because its devices stayed held after a stall or timeout
    // comes back only once no process holds them (then its own check decides).
    bool waiting;
    {
        std::lock_guard lk(m_mu);
        waiting = m_devices_held.count(r.name) != 0;
    }
    if (waiting) {
        if (auto holder = device_holder(r.devices)) {
            return Health{false, std::chrono::system_clock::now(), std::nullopt, describe(*holder)};
        }
        std::lock_guard lk(m_mu);
        m_devices_held.erase(r.name);
    }
    return health_check(r);
}

Health LocalExecutor::check_health(const std::string& slot) {
    auto s = settings();
    if (is_build_slot(*s, slot)) return Health{true, std::chrono::system_clock::now(), 0, ""};
    const auto* r = runner(*s, slot);
    if (!r)
        return Health{false, std::chrono::system_clock::now(), std::nullopt,
                      "no such runner in the configuration"};
    return slot_health(*r);
}

std::vector<SlotOffer> LocalExecutor::slots() const {
    auto s = settings();
    std::vector<SlotOffer> out;
    for (const auto& r : s->runners) out.push_back(SlotOffer{r.name, r.labels});
    if (s->build) {
        for (std::uint32_t i = 1; i <= s->build->slots; ++i)
            out.push_back(SlotOffer{k_build_slot_prefix + std::to_string(i), {}, true});
    }
    return out;
}

RawOutcome LocalExecutor::run(const JobToRun& job, const std::atomic<bool>& cancel,
                              const AttemptHooks& hooks) {
    auto s = settings();
    RawOutcome out;
    // A build slot (docs/build.md) has no device and no check; a runner slot is configured.
    config::RunnerConfig build_slot;
    build_slot.name = job.slot;
    const auto* slot =
        job.build && is_build_slot(*s, job.slot) ? &build_slot : runner(*s, job.slot);
    if (!slot) {
        out.not_run = "slot " + job.slot + " is no longer configured";
        return out;
    }
    // The device first: a failing health check takes the slot offline and the job waits.
    out.health = slot_health(*slot);
    if (!out.health->ok) {
        out.slot_unhealthy = true;
        return out;
    }
    auto a =
        prepare_attempt(*s, job, SlotSpec{slot->name, slot->env, slot->devices, slot->device_model},
                        s->execution.work_root / "logs");
    if (!a) {
        out.not_run = a.error().message;
        return out;
    }
    drop_absent_masks(a->process.argv);  // this host's: the command runs here
    // The job was cancelled since its lease: nothing is spawned.
    if (cancel.load() || !hooks.may_start()) {
        out.not_started = true;
        release_workspace(a->ws, s->execution, s->upstream, false);
        return out;
    }
    a->process.on_start = [&](pid_t pgid) { hooks.on_running(Started{pgid, {}}); };
    out.log_path = a->process.log_path.string();
    out.metadata = a->metadata;
    auto proc = run_supervised(a->process, &cancel);
    if (!proc) {
        out.not_run = "cannot start the test command: " + proc.error().message;
        release_workspace(a->ws, s->execution, s->upstream, true);
        return out;
    }
    collect_attempt(*s, *a, *proc, cancel.load(), out);
    if ((proc->timed_out || proc->stalled) && !slot->devices.empty())
        out.health_after = after_release(*slot, s->execution);
    return out;
}

Health LocalExecutor::after_release(const config::RunnerConfig& slot,
                                    const config::ExecutionConfig& x) {
    // A test that stalled may have left a process in the driver: wait for the devices to be
    // released, then check the slot's health.
    const auto until = std::chrono::steady_clock::now() + x.card_release_timeout;
    auto holder = device_holder(slot.devices);
    while (holder && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        holder = device_holder(slot.devices);
    }
    if (holder) {
        std::lock_guard lk(m_mu);
        m_devices_held.insert(slot.name);
        return Health{false, std::chrono::system_clock::now(), std::nullopt,
                      describe(*holder) + " " + format_duration(x.card_release_timeout) +
                          " after the job ended"};
    }
    return health_check(slot);
}

namespace {

/// Whether the process `pid` runs with CRCR_JOB_ID=<job_id> in its environment.
bool is_job_process(const std::string& pid, std::int64_t job_id) {
    auto env = read_file("/proc/" + pid + "/environ", 1 << 20);
    if (!env) return false;
    const std::string needle = "CRCR_JOB_ID=" + std::to_string(job_id);
    std::size_t pos = 0;
    while (pos < env->size()) {
        auto end = env->find('\0', pos);
        if (env->compare(pos, (end == std::string::npos ? env->size() : end) - pos, needle) == 0)
            return true;
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return false;
}

}  // namespace

int LocalExecutor::abandon(std::int64_t job_id) {
    // The job's init died with the previous daemon; the command and anything it detached may not
    // have.
    int killed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (is_job_process(name, job_id) &&
            ::kill(static_cast<pid_t>(std::stol(name)), SIGKILL) == 0)
            ++killed;
    }
    return killed;
}

}  // namespace crcrd::exec
