#include "crcrd/admin/metrics.hpp"

#include <chrono>
#include <sstream>
#include <vector>

#include "crcrd/core/time.hpp"
#include "crcrd/store/sqlite.hpp"

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

/// One metric family from a GROUP BY query whose last column is the value and whose other
/// columns are the labels named in `labels`.
void family(std::ostringstream& out, store::Db& db, const char* name, const char* type, const char* help,
            const std::vector<const char*>& labels, const std::string& sql) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    auto st = db.prepare(sql);
    const int n = static_cast<int>(labels.size());
    while (st.step()) {
        out << name;
        if (n > 0) {
            out << "{";
            for (int i = 0; i < n; ++i) out << (i ? "," : "") << labels[static_cast<std::size_t>(i)] << "=\"" << escape(st.text(i)) << "\"";
            out << "}";
        }
        out << " " << st.int64(n) << "\n";
    }
}

}  // namespace

Result<std::string> metrics_text(const std::filesystem::path& path, std::size_t writer_pending) {
    auto opened = store::Db::open(path, store::OpenOptions{true, 5000});
    if (!opened) return opened.error();
    auto& db = **opened;
    std::ostringstream out;
    try {
        out << "# HELP crcrd_build_info The running crcrd.\n# TYPE crcrd_build_info gauge\ncrcrd_build_info{version=\""
            << CRCRD_VERSION << "\"} 1\n";
        family(out, db, "crcrd_deliveries_total", "counter", "Requests to the webhook path, by verdict.", {"verdict"},
               "SELECT verdict, count(*) FROM deliveries GROUP BY verdict");
        family(out, db, "crcrd_runs", "gauge", "Runs by state and class.", {"state", "conclusion"},
               "SELECT state, coalesce(conclusion, ''), count(*) FROM runs GROUP BY 1, 2");
        family(out, db, "crcrd_jobs", "gauge", "Jobs (attempts) by state.", {"state"},
               "SELECT state, count(*) FROM jobs GROUP BY state");
        family(out, db, "crcrd_job_attempts_total", "counter", "Finished attempts by class (retries included).",
               {"conclusion"}, "SELECT conclusion, count(*) FROM jobs WHERE state = 'completed' GROUP BY conclusion");
        family(out, db, "crcrd_slots", "gauge", "Runner slots by state.", {"state"},
               "SELECT CASE WHEN drained AND state = 'idle' THEN 'drained' ELSE state END, count(*) FROM slots GROUP BY 1");
        family(out, db, "crcrd_outbox", "gauge", "Outbox rows by sink and delivery state.", {"sink", "delivery"},
               "SELECT sink, delivery, count(*) FROM outbox GROUP BY sink, delivery");
        family(out, db, "crcrd_outbox_credentials_rejected", "gauge",
               "Statuses waiting because their last attempt was answered 401 or 403 (not a rate limit): a revoked "
               "or rotated token; retried until the credentials work.",
               {"sink"},
               "SELECT sink, count(*) FROM outbox WHERE delivery = 'waiting' AND http_status IN (401, 403) GROUP BY sink");
        std::int64_t oldest = 0;
        auto st = db.prepare("SELECT min(created_at) FROM outbox WHERE delivery = 'waiting'");
        if (st.step() && !st.is_null(0)) {
            if (auto t = parse_rfc3339(st.text(0))) {
                oldest = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *t).count();
            }
        }
        out << "# HELP crcrd_outbox_oldest_waiting_seconds Age of the oldest status not delivered yet (0: none).\n"
               "# TYPE crcrd_outbox_oldest_waiting_seconds gauge\ncrcrd_outbox_oldest_waiting_seconds "
            << oldest << "\n";
        out << "# HELP crcrd_writer_pending Writes queued for the database.\n# TYPE crcrd_writer_pending gauge\n"
               "crcrd_writer_pending "
            << writer_pending << "\n";
    } catch (const store::SqlError& e) {
        return make_error(e.kind(), e.what());
    }
    return out.str();
}

}  // namespace crcrd::admin
