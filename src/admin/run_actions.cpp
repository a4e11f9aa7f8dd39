#include "crcrd/admin/run_actions.hpp"

#include <algorithm>
#include <cctype>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/sha.hpp"
#include "crcrd/core/time.hpp"
#include "crcrd/store/deliveries.hpp"
#include "crcrd/store/runs.hpp"

namespace crcrd::admin {

using nlohmann::json;

Result<json> create_manual_run(store::Db& db, const json& body,
                               const std::vector<std::string>& known_tiers,
                               const std::string& who) {
    if (!body.is_object() || !body.contains("sha") || !body["sha"].is_string()) {
        return make_error(Errc::bad_request,
                          "the body must be {\"sha\": \"<40 hex>\", \"tiers\": [...]}");
    }
    std::string sha = body["sha"];
    if (!valid_sha(sha))
        return make_error(Errc::bad_request, "sha must be a full 40-character commit SHA");
    std::transform(sha.begin(), sha.end(), sha.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::vector<std::string> tiers;
    if (body.contains("tiers")) {
        if (!body["tiers"].is_array())
            return make_error(Errc::bad_request, "tiers must be a list of tier names");
        for (const auto& t : body["tiers"]) {
            if (!t.is_string())
                return make_error(Errc::bad_request, "tiers must be a list of tier names");
            if (std::find(known_tiers.begin(), known_tiers.end(), t.get<std::string>()) ==
                known_tiers.end()) {
                return make_error(Errc::bad_request,
                                  "no tier '" + t.get<std::string>() + "' in the rules file");
            }
            tiers.push_back(t);
        }
    }
    if (known_tiers.empty())
        return make_error(Errc::bad_request, "no rules file is configured (selection.rules)");
    if (tiers.empty()) tiers = known_tiers;
    store::NewRun r;
    r.event = RunEvent::manual;
    r.sha = sha;
    r.delivery_id = "manual:" + crypto::random_uuid();
    r.inputs_json = json{{"form", "manual"}, {"tiers", tiers}, {"requested_by", who}}.dump();
    auto id = store::insert_run(db, r, std::chrono::system_clock::now());
    return json{{"run_id", id}, {"sha", sha}, {"tiers", tiers}};
}

Result<json> retry_run(store::Db& db, std::int64_t id, const std::string& who) {
    auto source = store::RunsRepo(db).retry_source(id);
    if (!source) return make_error(Errc::not_found, "no run " + std::to_string(id));
    store::NewRun r = std::move(source->run);
    const RunState state = source->state;
    auto inputs = json::parse(r.inputs_json, nullptr, false);
    if (is_open(state)) {
        return make_error(Errc::conflict, "run " + std::to_string(id) + " is still " +
                                              std::string(to_string(state)));
    }
    if (!inputs.is_object()) inputs = json::object();
    inputs["retry_of"] = id;
    inputs["requested_by"] = who;
    r.inputs_json = inputs.dump();
    r.delivery_id = "retry:" + std::to_string(id) + ":" + crypto::random_uuid();
    // No concurrency group: a retry asked for by an operator is not superseded by, and does
    // not supersede, the runs of its PR or branch.
    auto new_id = store::insert_run(db, r, std::chrono::system_clock::now());
    return json{{"run_id", new_id}, {"retry_of", id}, {"sha", r.sha}};
}

}  // namespace crcrd::admin
