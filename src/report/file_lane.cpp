// The report-file lane (docs/reporting.md): each status as a JSON line, in id order, written
// and synced in batches of 64.
#include <nlohmann/json.hpp>

#include "report/lane.hpp"

namespace crcrd::report {

namespace {

using nlohmann::json;

class FileLane final : public Lane {
  public:
    explicit FileLane(LaneDeps deps) : Lane(Sink::file, store::LaneOrder::fifo, 64, deps) {}
    ~FileLane() override { stop(); }

  protected:
    bool configured(const SenderSettings& s) const override { return s.file.has_value(); }
    Outcome deliver(store::OutboxQueue&, const Row& row, const SenderSettings& s) override {
        if (!s.file)
            return {Outcome::dead, std::nullopt, "report.file is no longer configured",
                    std::nullopt};
        json line = {{"at", clock().now_text()},
                     {"run_id", row.run_id},
                     {"sha", row.sha},
                     {"context", row.context},
                     {"state", row.state},
                     {"description", row.description},
                     {"target_url", row.target_url ? json(*row.target_url) : json(nullptr)}};
        m_lines += line.dump() + "\n";  // written and synced by write_gathered()
        return {Outcome::sent, std::nullopt, "", std::nullopt};
    }
    void discard_gathered() override { m_lines.clear(); }
    Status write_gathered(const SenderSettings& s) override {
        if (m_lines.empty()) return Ok{};
        auto st = s.file ? append_lines(*s.file, m_lines)
                         : Status(make_error(Errc::report_file, "report.file is gone"));
        m_lines.clear();
        return st;
    }

  private:
    std::string m_lines;  // lines not yet written
};

}  // namespace

std::unique_ptr<Lane> make_file_lane(LaneDeps deps) {
    return std::make_unique<FileLane>(std::move(deps));
}

}  // namespace crcrd::report
