#include <gtest/gtest.h>

#include <fstream>

#include "crcrd/config/config.hpp"
#include "crcrd/exec/registry.hpp"
#include "crcrd/exec/slurm/slurm_section.hpp"
#include "support/temp_dir.hpp"

namespace crcrd::config {
namespace {

const char* k_minimal = R"(
server: {listen: "127.0.0.1:8443"}
storage: {path: state/crcrd.db}
ingest: {secrets: [{id: current, file: webhook.secret}]}
trust: {downstream_repo: torch-spyre/torch-spyre, fork_labels: [ciflow/crcr/spyre]}
)";

/// The configuration as the daemon reads it: with every executor's keys.
Loaded parse(const std::string& text, const Path& base_dir) {
    return config::parse(text, base_dir, exec::executor_keys());
}

bool has_error(const Loaded& l, const std::string& text) {
    for (const auto& e : l.errors)
        if (e.find(text) != std::string::npos) return true;
    return false;
}

std::string all(const Loaded& l) {
    std::string s;
    for (const auto& e : l.errors) s += e + "\n";
    return s;
}

TEST(Config, MinimalGetsDefaultsAndResolvesRelativePaths) {
    auto l = parse(k_minimal, "/etc/crcrd");
    ASSERT_TRUE(l.config) << all(l);
    const auto& c = *l.config;
    EXPECT_EQ(c.server.port, 8443);
    EXPECT_FALSE(c.server.tls);
    EXPECT_EQ(c.server.max_body_bytes, 1024u * 1024u);
    EXPECT_EQ(c.storage.path, "/etc/crcrd/state/crcrd.db");
    EXPECT_EQ(c.ingest.secrets.at(0).file, "/etc/crcrd/webhook.secret");
    EXPECT_EQ(c.ingest.max_clock_skew, std::chrono::seconds(300));
    EXPECT_EQ(c.trust.upstream_repo, "pytorch/pytorch");
    EXPECT_EQ(c.execution.isolation, config::Isolation::bwrap);
}

TEST(Config, TheContractExampleIsValid) {
    // The example of docs/configuration.md ("An example"), key for key.
    const char* text = R"(
server:
  listen: "127.0.0.1:8443"
  tls: {cert: /etc/crcrd/tls.crt, key: /etc/crcrd/tls.key}
  public_url: "https://ci.example.org:8443"
  max_body_bytes: 1048576
storage: {path: /var/lib/crcrd/crcrd.db}
ingest:
  secrets: [{id: current, file: /etc/crcrd/webhook.secret}]
  standard_webhooks_secrets: [{id: relay, file: /etc/crcrd/relay.whsec}]
  max_clock_skew: 300s
trust:
  upstream_repo: pytorch/pytorch
  downstream_repo: torch-spyre/torch-spyre
  senders: []
  fork_policy: require_label
  fork_labels: ["ciflow/crcr/spyre"]
upstream: {mirror: /var/lib/crcrd/pytorch.git, remote: "https://github.com/pytorch/pytorch.git"}
selection: {rules: /etc/crcrd/selection.yaml}
runners:
  - {name: spyre-0, labels: [spyre_pf_x1], env: {SPYRE_DEVICES: "0"}, devices: [/dev/vfio/0],
     health_check: ["/usr/local/bin/spyre-health", "0"], device_model: "IBM Spyre"}
execution:
  command: ["/opt/torch-spyre/ci/run-crcr-tests.sh"]
  work_root: /var/lib/crcrd/work
  env: {PIP_CACHE_DIR: /var/cache/crcrd/pip}
  isolation: bwrap
  stall_timeout: 300s
  device_wait: 30m
  health_interval: 30s
  max_log_bytes: 64MiB
  infra_retries: 2
  flaky_reruns: 1
  backend_dir: /opt/torch-spyre
  driver_version_command: ["/usr/local/bin/spyre-smi", "--driver-version"]
classify:
  device_patterns: ["RAS::VFIO::DeviceOpenFail"]
  infra_patterns: ["No space left on device", "ERROR: Could not install packages"]
report:
  github: {api_url: "https://api.github.com", repo: pytorch/pytorch, token_file: /etc/crcrd/gh.token, context_prefix: crcr/spyre, mode: advisory}
  file: /var/lib/crcrd/statuses.jsonl
admin:
  tokens: [{name: ops, sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", role: admin}]
)";
    auto l = parse(text, "/");
    ASSERT_TRUE(l.config) << all(l);
    const auto& c = *l.config;
    ASSERT_TRUE(c.server.tls);
    EXPECT_EQ(c.runners.at(0).env.at("SPYRE_DEVICES"), "0");
    EXPECT_EQ(c.runners.at(0).device_model, "IBM Spyre");
    EXPECT_EQ(c.execution.max_log_bytes, 64u << 20);
    EXPECT_EQ(c.execution.device_wait, std::chrono::minutes(30));
    EXPECT_EQ(c.report.github->context_prefix, "crcr/spyre");
    EXPECT_EQ(c.admin.tokens.at(0).role, "admin");
}

TEST(Config, ErrorsNameTheKeyPath) {
    struct Case {
        std::string yaml_tail;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {"bogus: 1\n", "bogus: unknown key"},
        {"execution: {stall_timeout: 5}\n", "execution.stall_timeout: '5' is not a duration"},
        {"execution: {isolation: docker}\n",
         "execution.isolation: 'docker' is not one of bwrap | user | none"},
        {"execution: {max_log_bytes: lots}\n", "execution.max_log_bytes"},
        {"runners: [{labels: [a]}]\n", "runners[0].name: required"},
        {"runners: [{name: a, labelz: [a]}]\n", "runners[0].labelz: unknown key"},
        {"admin: {tokens: [{name: a, sha256: abc, role: admin}]}\n", "admin.tokens[0].sha256"},
        {"admin: {tokens: [{name: a, sha256: "
         "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, role: root}]}\n",
         "admin.tokens[0].role"},
        {"classify: {infra_patterns: ['(unclosed']}\n", "classify.infra_patterns"},
        // RE2 syntax: no back-references, no look-around; the error names the pattern.
        {"classify: {device_patterns: ['a(b)\\66666666666666666666']}\n",
         "classify.device_patterns: entry 0: 'a(b)\\66666666666666666666' is not a valid RE2 "
         "regex: invalid escape sequence: \\6"},
        {"classify: {infra_patterns: [ok, 'lost(?= runner)']}\n",
         "classify.infra_patterns: entry 1: 'lost(?= runner)' is not a valid RE2 regex: invalid "
         "perl operator: (?="},
        {"report: {github: {repo: pytorch/pytorch}}\n", "report.github.token_file: required"},
        {"execution: {stall_timeout: 5s, stall_timeout: 6s}\n",
         "execution.stall_timeout: given twice"},
        {"execution: {isolation: none, network: none}\n",
         "execution.network: none needs isolation: bwrap"},
        {"execution: {isolation: none, sandbox_socket: /run/crcrd/sandbox.sock}\n",
         "execution.sandbox_socket: only with isolation: bwrap and executor: local"},
        {"execution: {sandbox_socket: /sandbox.sock}\n",
         "execution.sandbox_socket: must lie in a folder of its own (the jobs' sandbox hides that "
         "folder), not in /"},
        {"execution: {network: off}\n", "execution.network: 'off' is not one of host | none"},
        {"report: {github: {api_url: \"http://api.github.com\", repo: a/b, token_file: t}}\n",
         "report.github.api_url: 'http://api.github.com' must be an absolute https:// URL (it "
         "carries credentials)"},
        {"report: {crcr_callback: {url: \"http://relay/cb\", token_file: t}}\n",
         "report.crcr_callback.url: 'http://relay/cb' must be"},
        {"classify: {base_check: always}\n",
         "classify.base_check: 'always' is not one of lookup | run | off"},
        {"execution: {rerun: some}\n", "execution.rerun: 'some' is not one of failed_tests | tier"},
        {"bisect: {refs: [\"main~1\"]}\n", "bisect.refs: 'main~1' is not a branch name"},
        {"bisect: {max_runs: -1}\n", "bisect.max_runs"},
        {"bisect: {budget: 3}\n", "bisect.budget: unknown key"},
        {"report: {github: {repo: a/b, token_file: t, budget: [{requests: 0, per: 1m}]}}\n",
         "report.github.budget[0].requests: a window needs requests: a whole number of at least 1"},
        {"report: {github: {repo: a/b, token_file: t, budget: [{requests: 5}]}}\n",
         "report.github.budget[0].per: a window needs per: from 1s to 24h (the request log keeps a "
         "day)"},
        {"report: {github: {repo: a/b, token_file: t, budget: [{requests: 5, per: 48h}]}}\n",
         "report.github.budget[0].per: a window needs per: from 1s to 24h"},
        {"report: {crcr_callback: {file: cb.jsonl, budget: [{requests: 5, per: 1m, "
         "burst: 2}]}}\n",
         "report.crcr_callback.budget[0].burst: unknown key"},
        {"execution: {executor: k8s}\n", "execution.executor: 'k8s' is not one of local | slurm"},
        {"execution: {executor: slurm}\n", "execution.slurm: required when executor is slurm"},
        {"execution: {slurm: {partition: p, shared_root: /s, sbatch_args: [\"-p\", x, "
         "\"--time=5\"]}}\n",
         "execution.slurm.sbatch_args: '-p' is set by crcrd"},
        {"execution: {slurm: {partition: p, shared_root: /s, max_submitted: 0}}\n",
         "execution.slurm.max_submitted: must be between"},
        {"execution: {slurm: {shared_root: /s}}\n", "execution.slurm.partition: required"},
        {"build: {cache_dir: /c}\n", "build.command: required"},
        {"build: {command: [b.sh]}\n", "build.cache_dir: required"},
        {"build: {command: [b.sh], cache_dir: /c, slots: 0}\n", "build.slots: must be at least 1"},
        {"build: {command: [b.sh], cache_dir: /c, key_env: [USE_SPYRE]}\n",
         "build.key_env: 'USE_SPYRE' is not a variable of execution.env"},
        {"build: {command: [b.sh], cache_dir: /c, ccache: {max_size: 1GiB}}\n",
         "build.ccache.dir: required"},
        {"build: {command: [b.sh], cache_dir: /c, timeout: 5}\n",
         "build.timeout: '5' is not a duration"},
        {"build: {command: [b.sh], cache_dir: /c, partition: cpu}\n",
         "build.partition: only with executor: slurm"},
        {"build: {command: [b.sh], cache_dir: /c, sbatch_args: [-N1]}\n",
         "build.sbatch_args: only with executor: slurm"},
        {"runners: [{name: build-1}]\nbuild: {command: [b.sh], cache_dir: /c}\n",
         "build.slots: the runner 'build-1' has a build slot's name"},
        {"execution: {slurm: {partition: p, shared_root: /s}, executor: slurm}\n"
         "build: {command: [b.sh], cache_dir: /s/builds}\n",
         "build.partition: required"},
        {"execution: {slurm: {partition: p, shared_root: /s}, executor: slurm}\n"
         "build: {command: [b.sh], cache_dir: /c, partition: cpu}\n",
         "build.cache_dir: must be inside execution.slurm.shared_root (/s)"},
        {"execution: {slurm: {partition: p, shared_root: /s}, executor: slurm}\n"
         "build: {command: [b.sh], cache_dir: /s/jobs/b, partition: cpu}\n",
         "build.cache_dir: must not be in /s/jobs"},
        {"execution: {slurm: {partition: p, shared_root: /s}, executor: slurm}\n"
         "build: {command: [b.sh], cache_dir: /s/b, partition: cpu, ccache: {dir: /cc}}\n",
         "build.ccache: dir must be inside execution.slurm.shared_root"},
        {"execution: {slurm: {partition: p, shared_root: /s}, executor: slurm}\n"
         "build: {command: [b.sh], cache_dir: /s/b, partition: cpu, sbatch_args: "
         "[\"--gres=aiu:1\"]}\n",
         "build.sbatch_args: '--gres=aiu:1' is set by crcrd"},
    };
    for (const auto& c : cases) {
        auto l = parse(std::string(k_minimal) + c.yaml_tail, "/etc");
        EXPECT_FALSE(l.config) << c.yaml_tail;
        EXPECT_TRUE(has_error(l, c.expect)) << "wanted '" << c.expect << "' in:\n" << all(l);
    }
}

TEST(Config, BisectAndALocalRemote) {
    auto l = parse(std::string(k_minimal) +
                       "bisect: {max_runs: 6, refs: [main, refs/heads/release]}\n"
                       "upstream: {mirror: m.git, remote: ../upstream}\n",
                   "/etc/crcrd");
    ASSERT_TRUE(l.config) << all(l);
    EXPECT_EQ(l.config->bisect.max_runs, 6u);
    EXPECT_EQ(l.config->bisect.refs, (std::vector<std::string>{"main", "refs/heads/release"}));
    // A local remote is relative to the file's folder; a URL stays as it is.
    EXPECT_EQ(l.config->upstream.remote, "/etc/upstream");
    auto url =
        parse(std::string(k_minimal) +
                  "upstream: {mirror: m.git, remote: \"https://github.com/pytorch/pytorch.git\"}\n",
              "/etc");
    ASSERT_TRUE(url.config) << all(url);
    EXPECT_EQ(url.config->upstream.remote, "https://github.com/pytorch/pytorch.git");
    auto defaults = parse(k_minimal, "/etc");
    ASSERT_TRUE(defaults.config);
    EXPECT_EQ(defaults.config->bisect.max_runs, 0u);
    EXPECT_EQ(defaults.config->bisect.refs, (std::vector<std::string>{"main"}));
}

TEST(Config, ReportBudgetsDefaultToGithubsAndTheRelaysLimitsAndMayBeReplacedOrEmptied) {
    using std::chrono::hours;
    using std::chrono::minutes;
    auto defaults = parse(std::string(k_minimal) +
                              "report: {github: {repo: a/b, token_file: t}, crcr_callback: "
                              "{file: cb.jsonl}}\n",
                          "/etc");
    ASSERT_TRUE(defaults.config) << all(defaults);
    const auto& gh = defaults.config->report.github->budget;
    ASSERT_EQ(gh.size(), 2u);
    EXPECT_EQ(gh[0].requests, 80);
    EXPECT_EQ(gh[0].per, minutes(1));
    EXPECT_EQ(gh[1].requests, 500);
    EXPECT_EQ(gh[1].per, hours(1));
    ASSERT_EQ(defaults.config->report.crcr_callback->budget.size(), 1u);
    EXPECT_EQ(defaults.config->report.crcr_callback->budget[0].requests, 100);
    auto set = parse(std::string(k_minimal) +
                         "report: {github: {repo: a/b, token_file: t, budget: [{requests: 4000, "
                         "per: 1h}]}, crcr_callback: {file: cb.jsonl, budget: []}}\n",
                     "/etc");
    ASSERT_TRUE(set.config) << all(set);
    ASSERT_EQ(set.config->report.github->budget.size(), 1u);
    EXPECT_EQ(set.config->report.github->budget[0].requests, 4000);
    EXPECT_TRUE(set.config->report.crcr_callback->budget.empty());
}

TEST(Config, ABuildSectionGetsDefaultsAndResolvesItsPaths) {
    auto none = parse(k_minimal, "/etc/crcrd");
    ASSERT_TRUE(none.config) << all(none);
    EXPECT_FALSE(none.config->build) << "no build: section, no build stage";
    auto l = parse(std::string(k_minimal) +
                       "execution: {env: {USE_SPYRE: \"1\"}}\n"
                       "build: {command: [ci/build.sh, -j8], cache_dir: builds, key_env: "
                       "[USE_SPYRE], ccache: {dir: ccache}, slots: 2}\n",
                   "/etc/crcrd");
    ASSERT_TRUE(l.config) << all(l);
    const auto& b = *l.config->build;
    EXPECT_EQ(b.command, (std::vector<std::string>{"/etc/crcrd/ci/build.sh", "-j8"}));
    EXPECT_EQ(b.cache_dir, "/etc/crcrd/builds");
    EXPECT_EQ(b.slots, 2u);
    EXPECT_EQ(b.timeout, std::chrono::hours(2));
    EXPECT_EQ(b.stall_timeout, std::chrono::minutes(30));
    EXPECT_EQ(b.cache_max_bytes, 50ULL << 30);
    EXPECT_EQ(b.key_env, (std::vector<std::string>{"USE_SPYRE"}));
    ASSERT_TRUE(b.ccache);
    EXPECT_EQ(b.ccache->dir, "/etc/crcrd/ccache");
    EXPECT_EQ(b.ccache->max_size, 5ULL << 30);
}

TEST(Config, ServerLimits) {
    auto with_server = [](const std::string& extra) {
        std::string y = k_minimal;
        y.replace(y.find("listen: \"127.0.0.1:8443\"}"), 25,
                  "listen: \"127.0.0.1:8443\", " + extra + "}");
        return parse(y, "/etc");
    };
    EXPECT_TRUE(with_server("max_header_bytes: 64KiB, handshake_timeout: 2s").config);
    EXPECT_TRUE(has_error(with_server("max_header_bytes: 100"),
                          "server.max_header_bytes: must be from 1KiB to 1MiB"));
    EXPECT_TRUE(has_error(with_server("max_connections_per_ip: 0"),
                          "server.max_connections_per_ip: must be positive"));
    EXPECT_TRUE(has_error(with_server("public_url: \"http://ci.example\""),
                          "server.public_url: 'http://ci.example' must be"));
    EXPECT_TRUE(with_server("public_url: \"https://ci.example:8443/\"").config);
    auto twice = parse(std::string(k_minimal) + "server: {listen: \"127.0.0.1:9\"}\n", "/etc");
    EXPECT_TRUE(has_error(twice, "server: given twice")) << all(twice);
}

TEST(Config, StructuralErrors) {
    auto l = parse(
        "server: {listen: \"0.0.0.0:8443\"}\nstorage: {path: x}\ningest: {secrets: []}\ntrust: "
        "{fork_policy: run}\n",
        "/");
    EXPECT_FALSE(l.config);
    EXPECT_TRUE(has_error(l, "server.tls: required")) << all(l);
    EXPECT_TRUE(has_error(l, "ingest.secrets: at least one secret")) << all(l);
    EXPECT_TRUE(has_error(l, "trust.downstream_repo: required")) << all(l);

    auto bad_listen = parse(std::string(k_minimal) + "execution: {}\n", "/");
    EXPECT_TRUE(bad_listen.config) << all(bad_listen);
    auto no_port = parse(
        "server: {listen: \"127.0.0.1\"}\nstorage: {path: x}\ningest: {secrets: [{id: a, file: "
        "f}]}\ntrust: {downstream_repo: a/b, fork_policy: run}\n",
        "/");
    EXPECT_TRUE(has_error(no_port, "server.listen")) << all(no_port);

    auto yaml = parse("server: [\n", "/");
    EXPECT_FALSE(yaml.config);
    EXPECT_TRUE(has_error(yaml, "line")) << all(yaml);

    auto line = parse(std::string(k_minimal) + "execution:\n  stall_timeout: forever\n", "/");
    EXPECT_TRUE(has_error(line, "(line 7)")) << all(line);
}

TEST(Config, LoadReportsUnreadableFile) {
    auto l = load("/nonexistent/crcrd.yaml", exec::executor_keys());
    EXPECT_FALSE(l.config);
    EXPECT_TRUE(has_error(l, "/nonexistent/crcrd.yaml"));
}

TEST(Config, TheChosenExecutorsSectionIsKeptAsItsOwnType) {
    auto slurm =
        parse(std::string(k_minimal) +
                  "execution: {executor: slurm, slurm: {partition: spyre, shared_root: /srv/crcrd, "
                  "gres_per_label: {aiu1: \"aiu:1\"}}}\n",
              "/etc");
    ASSERT_TRUE(slurm.config) << all(slurm);
    const auto* sl = slurm.config->execution.section<exec::slurm::SlurmSection>();
    ASSERT_NE(sl, nullptr);
    EXPECT_EQ(sl->partition, "spyre");
    EXPECT_EQ(sl->shared_root, "/srv/crcrd");
    EXPECT_EQ(sl->gres_per_label.at("aiu1"), "aiu:1");
    // A section of an executor not chosen is checked, not kept; the local executor has none.
    auto local = parse(
        std::string(k_minimal) + "execution: {slurm: {partition: p, shared_root: /s}}\n", "/etc");
    ASSERT_TRUE(local.config) << all(local);
    EXPECT_EQ(local.config->execution.executor_section, nullptr);
    EXPECT_TRUE(has_error(parse(std::string(k_minimal) + "execution: {local: {x: 1}}\n", "/etc"),
                          "execution.local: the local executor has no keys of its own"));
    // The build's Slurm keys, kept as the executor's type too.
    auto built = parse(
        std::string(k_minimal) +
            "execution: {executor: slurm, slurm: {partition: spyre, shared_root: /srv/crcrd}}\n"
            "build: {command: [b.sh], cache_dir: /srv/crcrd/builds, slots: 3, partition: "
            "cpu, sbatch_args: [\"--cpus-per-task=8\"]}\n",
        "/etc");
    ASSERT_TRUE(built.config) << all(built);
    const auto* b = built.config->build->section<exec::slurm::SlurmBuildSection>();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->partition, "cpu");
    EXPECT_EQ(b->sbatch_args, std::vector<std::string>{"--cpus-per-task=8"});
    EXPECT_EQ(built.config->build->slots, 3u);
    auto local_build =
        parse(std::string(k_minimal) + "build: {command: [b.sh], cache_dir: /c}\n", "/etc");
    ASSERT_TRUE(local_build.config) << all(local_build);
    EXPECT_EQ(local_build.config->build->executor_section, nullptr);
}

}  // namespace
}  // namespace crcrd::config
