#include "crcrd/admin/metrics.hpp"

#include <chrono>
#include <sstream>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/store/metrics.hpp"

namespace crcrd::admin {

namespace {

/// Label values escaped as the text format wants (backslash, quote, newline).
std::string escape(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

/// One metric family: a line per count, its labels named in `labels` (in the counts' order).
void family(std::ostringstream& out, const char* name, const char* type, const char* help,
            const std::vector<const char*>& labels, const std::vector<store::LabelledCount>& counts) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    const std::size_t n = labels.size();
    for (const auto& c : counts) {
        out << name;
        if (n > 0) {
            out << "{";
            for (std::size_t i = 0; i < n; ++i) out << (i ? "," : "") << labels[i] << "=\"" << escape(c.labels.at(i)) << "\"";
            out << "}";
        }
        out << " " << c.value << "\n";
    }
}

}  // namespace

Result<std::string> metrics_text(const std::filesystem::path& path, std::size_t writer_pending) {
    auto read = store::read_metrics(path);
    if (!read) return read.error();
    const auto& m = *read;
    std::ostringstream out;
    out << "# HELP crcrd_build_info The running crcrd.\n# TYPE crcrd_build_info gauge\ncrcrd_build_info{version=\""
        << CRCRD_VERSION << "\"} 1\n";
    family(out, "crcrd_deliveries_total", "counter", "Requests to the webhook path, by verdict.", {"verdict"},
           m.deliveries_by_verdict);
    family(out, "crcrd_runs", "gauge", "Runs by state and class.", {"state", "conclusion"}, m.runs_by_state_class);
    family(out, "crcrd_jobs", "gauge", "Jobs (attempts) by state.", {"state"}, m.jobs_by_state);
    family(out, "crcrd_job_attempts_total", "counter", "Finished attempts by class (retries included).",
           {"conclusion"}, m.attempts_by_class);
    family(out, "crcrd_slots", "gauge", "Runner slots by state.", {"state"}, m.slots_by_state);
    family(out, "crcrd_outbox", "gauge", "Outbox rows by sink and delivery state.", {"sink", "delivery"},
           m.outbox_by_sink_delivery);
    family(out, "crcrd_outbox_credentials_rejected", "gauge",
           "Statuses waiting because their last attempt was answered 401 or 403 (not a rate limit): a revoked "
           "or rotated token; retried until the credentials work.",
           {"sink"}, m.outbox_credentials_rejected);
    std::int64_t oldest = 0;
    if (m.oldest_waiting_created_at) {
        if (auto t = parse_rfc3339(*m.oldest_waiting_created_at)) {
            oldest = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *t).count();
        }
    }
    out << "# HELP crcrd_outbox_oldest_waiting_seconds Age of the oldest status not delivered yet (0: none).\n"
           "# TYPE crcrd_outbox_oldest_waiting_seconds gauge\ncrcrd_outbox_oldest_waiting_seconds "
        << oldest << "\n";
    out << "# HELP crcrd_selection_misses_total Failures of a scheduled run that no PR or push run of the commits "
           "since the previous one selected (CONTRACT.md §5.3).\n# TYPE crcrd_selection_misses_total counter\n"
           "crcrd_selection_misses_total "
        << m.selection_misses << "\n";
    out << "# HELP crcrd_writer_pending Writes queued for the database.\n# TYPE crcrd_writer_pending gauge\n"
           "crcrd_writer_pending "
        << writer_pending << "\n";
    return out.str();
}

}  // namespace crcrd::admin
