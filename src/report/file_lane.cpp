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
        gather(line.dump());
        return {Outcome::sent, std::nullopt, "", std::nullopt};
    }
    LinesFile lines_file(const SenderSettings& s) const override { return {s.file, "report.file"}; }
};

}  // namespace

std::unique_ptr<Lane> make_file_lane(LaneDeps deps) {
    return std::make_unique<FileLane>(std::move(deps));
}

}  // namespace crcrd::report
