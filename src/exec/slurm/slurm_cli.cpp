#include "crcrd/exec/slurm/slurm_cli.hpp"

#include <algorithm>
#include <cctype>

namespace crcrd::exec::slurm {

namespace {

bool is_key(std::string_view k) {
    return !k.empty() && std::all_of(k.begin(), k.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '/';
    });
}

std::string field(const std::map<std::string, std::string>& f, const std::string& key) {
    auto it = f.find(key);
    return it == f.end() ? std::string() : it->second;
}

}  // namespace

std::map<std::string, std::string> parse_fields(std::string_view line) {
    std::map<std::string, std::string> out;
    std::string* last = nullptr;
    std::size_t pos = 0;
    while (pos < line.size()) {
        while (pos < line.size() &&
               (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\n' || line[pos] == '\r'))
            ++pos;
        if (pos >= line.size()) break;
        auto end = line.find_first_of(" \t\r\n", pos);
        if (end == std::string_view::npos) end = line.size();
        const std::string_view word = line.substr(pos, end - pos);
        const auto eq = word.find('=');
        if (eq != std::string_view::npos && is_key(word.substr(0, eq))) {
            last = &(out[std::string(word.substr(0, eq))] = std::string(word.substr(eq + 1)));
        } else if (last) {
            *last += ' ';
            *last += word;
        }
        pos = end;
    }
    return out;
}

std::optional<JobInfo> job_info(std::string_view line) {
    auto f = parse_fields(line);
    JobInfo j;
    j.id = field(f, "JobId");
    j.state = field(f, "JobState");
    if (j.id.empty() || j.state.empty()) return std::nullopt;
    // "CANCELLED by 0" in some records: the state is its first word.
    j.state = j.state.substr(0, j.state.find_first_of(" +"));
    j.reason = field(f, "Reason");
    j.node = field(f, "NodeList");
    if (j.node.empty() || j.node == "(null)") j.node = field(f, "BatchHost");
    if (j.node == "(null)") j.node.clear();
    j.exit_code = field(f, "ExitCode");
    j.name = f.count("JobName") ? field(f, "JobName") : field(f, "Name");
    return j;
}

namespace {

/// The last record of a jobcomp text whose line `matches` and whose job `accepts`.
template <class Matches, class Accepts>
std::optional<JobInfo> last_record(std::string_view text, Matches matches, Accepts accepts) {
    std::optional<JobInfo> found;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const auto line = text.substr(pos, end - pos);
        if (matches(line)) {
            if (auto j = job_info(line); j && accepts(*j)) found = std::move(j);
        }
        pos = end + 1;
    }
    return found;
}

}  // namespace

std::optional<JobInfo> find_completion(std::string_view text, const std::string& id) {
    const std::string needle = "JobId=" + id + " ";
    return last_record(
        text, [&](std::string_view line) { return line.rfind(needle, 0) == 0; },
        [](const JobInfo&) { return true; });
}

std::optional<JobInfo> find_completion_by_name(std::string_view text, const std::string& name) {
    const std::string needle = " Name=" + name + " ";
    return last_record(
        text, [&](std::string_view line) { return line.find(needle) != std::string_view::npos; },
        [&](const JobInfo& j) { return j.name == name; });
}

Phase phase_of(std::string_view state) {
    if (state == "COMPLETED" || state == "FAILED") return Phase::finished;
    if (state == "TIMEOUT" || state == "DEADLINE") return Phase::timed_out;
    if (state == "CANCELLED") return Phase::cancelled;
    if (state == "PREEMPTED") return Phase::preempted;
    if (state == "RUNNING" || state == "COMPLETING" || state == "STAGE_OUT" || state == "SIGNALING")
        return Phase::running;
    if (state == "PENDING" || state == "CONFIGURING" || state == "REQUEUED" ||
        state == "REQUEUE_FED" || state == "REQUEUE_HOLD" || state == "RESIZING" ||
        state == "SUSPENDED" || state == "STOPPED" || state == "RESV_DEL_HOLD" ||
        state == "SPECIAL_EXIT") {
        return Phase::waiting;
    }
    return Phase::infra;  // NODE_FAIL, BOOT_FAIL, OUT_OF_MEMORY, REVOKED and anything new
}

bool waits_for_device(std::string_view reason) {
    // scontrol writes a reason's spaces as underscores; squeue does not.
    return reason == "Resources" || reason.rfind("ReqNodeNotAvail", 0) == 0 ||
           reason == "NodeDown" || reason.rfind("Nodes_required_for_job_are_DOWN", 0) == 0 ||
           reason.rfind("Nodes required for job are DOWN", 0) == 0;
}

std::string time_limit(std::chrono::milliseconds timeout) {
    auto secs = (timeout.count() + 999) / 1000;
    if (secs < 1) secs = 1;
    const auto m = secs / 60;
    const auto s = secs % 60;
    return std::to_string(m) + ":" + (s < 10 ? "0" : "") + std::to_string(s);
}

std::optional<std::string> parse_sbatch_id(std::string_view out) {
    auto end = out.find_first_of(";\n");
    auto id = out.substr(0, end == std::string_view::npos ? out.size() : end);
    while (!id.empty() && (id.back() == ' ' || id.back() == '\r')) id.remove_suffix(1);
    if (id.empty() || id.size() > 20 ||
        !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); })) {
        return std::nullopt;
    }
    return std::string(id);
}

std::vector<std::string> sbatch_argv(const Submission& s) {
    std::vector<std::string> a = {"sbatch",
                                  "--parsable",
                                  "--export=NONE",
                                  "--no-requeue",
                                  "--job-name=" + s.job_name,
                                  "--comment=" + s.comment,
                                  "--partition=" + s.partition,
                                  "--time=" + time_limit(s.timeout),
                                  "--output=" + s.output,
                                  "--chdir=" + s.chdir};
    if (!s.gres.empty()) {
        std::string g;
        for (const auto& x : s.gres) g += (g.empty() ? "" : ",") + x;
        a.push_back("--gres=" + g);
    }
    a.insert(a.end(), s.extra.begin(), s.extra.end());
    a.push_back(s.script);
    a.insert(a.end(), s.command.begin(), s.command.end());
    return a;
}

std::vector<std::string> gres_for(const std::vector<std::string>& labels,
                                  const std::map<std::string, std::string>& map) {
    std::vector<std::string> out;
    for (const auto& l : labels) {
        auto it = map.find(l);
        if (it != map.end() && std::find(out.begin(), out.end(), it->second) == out.end())
            out.push_back(it->second);
    }
    return out;
}

nlohmann::json nodes_of(std::string_view text) {
    auto nodes = nlohmann::json::array();
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        auto line = text.substr(pos, end - pos);
        pos = end + 1;
        std::vector<std::string> cols;
        std::size_t c = 0;
        while (c <= line.size()) {
            auto bar = line.find('|', c);
            if (bar == std::string_view::npos) bar = line.size();
            cols.emplace_back(line.substr(c, bar - c));
            c = bar + 1;
        }
        if (cols.size() < 4 || cols[0].empty()) continue;
        std::string reason = cols.size() > 4 ? cols[4] : std::string();
        while (!reason.empty() && reason.back() == ' ') reason.pop_back();
        nodes.push_back({{"name", cols[0]},
                         {"state", cols[1]},
                         {"gres", cols[2]},
                         {"gres_used", cols[3]},
                         {"reason", reason.empty() || reason == "none" ? nlohmann::json(nullptr)
                                                                       : nlohmann::json(reason)}});
    }
    return nodes;
}

std::vector<std::string> sinfo_nodes_argv(const std::string& partition) {
    return {"sinfo", "--noheader", "--Node", "--partition=" + partition,
            "--Format=NodeHost:0|,StateLong:0|,Gres:0|,GresUsed:0|,Reason:0"};
}

}  // namespace crcrd::exec::slurm
