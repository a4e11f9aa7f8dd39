// Load generator for signed deliveries over TLS keep-alive: unique bodies and delivery ids,
// reports accepted deliveries per second and p50/p99 latency, and (with --db) checks that
// every 202 is stored. Against a static responder (--static) it only counts 2xx answers.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "crcrd/core/files.hpp"
#include "crcrd/ingest/signature.hpp"
#include "crcrd/store/sqlite.hpp"
#include "support/load.hpp"

using nlohmann::json;

int main(int argc, char** argv) {
    std::map<std::string, std::string> a;
    for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
    if (!a.count("--port") || !a.count("--ca") || !a.count("--fixture")) {
        std::cerr << "usage: bench_ingest --port P --ca CA.pem --fixture BODY.json [--secret S] "
                     "[--connections C]\n"
                     "                    [--total N] [--db crcrd.db] [--label NAME] [--run TAG] "
                     "[--rate PER_SECOND]\n";
        return 2;
    }
    const std::string secret = a.count("--secret") ? a["--secret"] : "bench-secret";
    const std::string tag = a.count("--run") ? a["--run"] : "bench";
    auto base = crcrd::read_file(a["--fixture"]);
    if (!base) {
        std::cerr << base.error().message << "\n";
        return 2;
    }
    json tmpl = json::parse(*base);

    crcrd::LoadOptions o;
    o.port = static_cast<std::uint16_t>(std::stoi(a["--port"]));
    o.ca_file = a["--ca"];
    o.connections = a.count("--connections") ? std::stoul(a["--connections"]) : 64;
    o.total = a.count("--total") ? std::stoul(a["--total"]) : 20000;
    o.rate = a.count("--rate") ? std::stod(a["--rate"]) : 0;
    // The body is serialised once with placeholders; each request only patches in its own
    // delivery id and SHA, so the generator spends its CPU on sending, not on JSON.
    tmpl["client_payload"]["delivery_id"] = "@@DELIVERY@@";
    tmpl["client_payload"]["payload"]["pull_request"]["head"]["sha"] = "@@SHA@@";
    const std::string templ = tmpl.dump();
    const auto at_delivery = templ.find("@@DELIVERY@@");
    const auto at_sha = templ.find("@@SHA@@");
    o.make = [&](std::size_t i) {
        std::string id = tag + "-" + std::to_string(i);
        char sha[41];
        std::snprintf(sha, sizeof sha, "%040zx", i + 1);  // a unique SHA, so every body differs
        std::string body = templ;
        if (at_delivery > at_sha) {
            body.replace(at_delivery, 12, id).replace(at_sha, 7, sha);
        } else {
            body.replace(at_sha, 7, sha).replace(at_delivery, 12, id);
        }
        return crcrd::LoadRequest{
            body,
            {{"Content-Type", "application/json"},
             {"X-GitHub-Event", "repository_dispatch"},
             {"X-GitHub-Delivery", "gh-" + id},
             {"X-Hub-Signature-256", crcrd::ingest::sign_github(secret, body)}}};
    };
    auto r = crcrd::run_load(o);

    std::size_t ok = 0;
    std::vector<double> lat;
    for (std::size_t i = 0; i < o.total; ++i) {
        if (r.status[i] >= 200 && r.status[i] < 300) {
            ++ok;
            lat.push_back(r.latency_ms[i]);
        }
    }
    std::size_t stored = 0, missing = 0;
    if (a.count("--db")) {
        auto db = crcrd::store::Db::open(a["--db"], crcrd::store::OpenOptions{true, 5000});
        if (!db) {
            std::cerr << db.error().message << "\n";
            return 1;
        }
        auto st = (*db)->prepare("SELECT count(*) FROM runs WHERE id = ? AND delivery_id = ?");
        for (std::size_t i = 0; i < o.total; ++i) {
            if (r.status[i] != 202) continue;
            st.reset();
            st.bind(1, json::parse(r.body[i])["run_id"].get<std::int64_t>())
                .bind(2, tag + "-" + std::to_string(i));
            st.step();
            (st.int64(0) == 1 ? stored : missing)++;
        }
    }
    std::printf(
        "%-22s requests=%zu ok=%zu errors=%zu elapsed=%.2fs rate=%.0f/s p50=%.2fms p99=%.2fms",
        a.count("--label") ? a["--label"].c_str() : "load", o.total, ok, o.total - ok, r.elapsed_s,
        static_cast<double>(ok) / r.elapsed_s, crcrd::percentile(lat, 50),
        crcrd::percentile(lat, 99));
    if (a.count("--db")) std::printf(" stored=%zu missing=%zu", stored, missing);
    std::printf("\n");
    return (missing == 0 && ok == o.total) ? 0 : 1;
}
