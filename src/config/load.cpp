#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>

#include "crcrd/config/config.hpp"
#include "crcrd/config/yaml_map.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/core/log_pattern.hpp"

namespace crcrd::config {

namespace {

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
    return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return v == a; });
}

std::string join(std::initializer_list<const char*> items) {
    std::string out;
    for (const char* i : items) out += (out.empty() ? "" : " | ") + std::string(i);
    return out;
}

void check_enum(YamlMap& m, const std::string& key, const std::string& value,
                std::initializer_list<const char*> allowed) {
    if (!one_of(value, allowed)) m.error(key, "'" + value + "' is not one of " + join(allowed));
}

/// Reads `key` as one of E's names (core/vocab.hpp); anything else is an error naming them.
template <class E>
void get_enum(YamlMap& m, const std::string& key, E& out) {
    std::string text(to_string(out));
    m.get(key, text);
    if (auto e = from_string<E>(text)) {
        out = *e;
        return;
    }
    m.error(key, "'" + text + "' is not one of " + joined_names<E>(" | "));
}

bool is_loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void parse_listen(YamlMap& m, const std::string& key, std::string& host, std::uint16_t& port) {
    std::string listen;
    m.get(key, listen);
    if (listen.empty()) return;
    static const std::regex k_form(R"(^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-]+):([0-9]{1,5})$)");
    std::smatch sm;
    if (!std::regex_match(listen, sm, k_form) || std::stoul(sm[2].str()) > 65535) {
        m.error(key, "'" + listen + "' is not HOST:PORT (IPv6 as [::1]:PORT)");
        return;
    }
    host = sm[1].str();
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    port = static_cast<std::uint16_t>(std::stoul(sm[2].str()));
}

/// URLs that carry credentials (a token, a JWT) go over TLS only (docs/configuration.md).
void check_https(YamlMap& m, const std::string& key, const std::string& url) {
    if (url.empty()) return;
    static const std::regex k_https(R"(^https://[^/\s?#]+(/[^\s]*)?$)", std::regex::icase);
    if (!std::regex_match(url, k_https)) {
        m.error(key, "'" + url + "' must be an absolute https:// URL (it carries credentials)");
    }
}

void secret_list(YamlMap& m, const std::string& key, std::vector<SecretRef>& out) {
    std::set<std::string> ids;
    m.each(key, [&](YamlMap& item) {
        SecretRef s;
        item.get("id", s.id, true);
        item.get_path("file", s.file, true);
        if (!s.id.empty() && !ids.insert(s.id).second)
            item.error("id", "duplicate secret id '" + s.id + "'");
        out.push_back(std::move(s));
    });
}

void parse_server(YamlMap m, ServerConfig& c) {
    parse_listen(m, "listen", c.host, c.port);
    if (m.has("tls")) {
        YamlMap t = m.child("tls");
        TlsConfig tls;
        t.get_path("cert", tls.cert, true);
        t.get_path("key", tls.key, true);
        c.tls = tls;
    } else {
        m.raw("tls");
        if (!is_loopback(c.host)) {
            m.error("tls", "required: plain HTTP is only allowed on a loopback listen address");
        }
    }
    m.get("public_url", c.public_url);
    if (!c.public_url.empty()) {
        static const std::regex k_public(
            R"(^https://[^/\s?#]+/?$|^https://[^/\s?#]+/[^\s?#]*[^/\s?#]$)", std::regex::icase);
        if (!std::regex_match(c.public_url, k_public)) {
            m.error("public_url",
                    "'" + c.public_url +
                        "' must be an absolute https:// URL (the links in commit statuses)");
        }
        while (!c.public_url.empty() && c.public_url.back() == '/') c.public_url.pop_back();
    }
    m.get_size("max_body_bytes", c.max_body_bytes);
    m.get_size("max_header_bytes", c.max_header_bytes);
    m.get("max_connections", c.max_connections);
    m.get("max_connections_per_ip", c.max_connections_per_ip);
    m.get("threads", c.threads);
    m.get("webhook_path", c.webhook_path);
    m.get("handshake_timeout", c.handshake_timeout);
    m.get("header_timeout", c.header_timeout);
    m.get("body_timeout", c.body_timeout);
    m.get("write_timeout", c.write_timeout);
    m.get("idle_timeout", c.idle_timeout);
    m.get("drain_timeout", c.drain_timeout);
    if (c.webhook_path.empty() || c.webhook_path.front() != '/')
        m.error("webhook_path", "must start with /");
    if (c.max_body_bytes == 0) m.error("max_body_bytes", "must be positive");
    if (c.max_connections == 0) m.error("max_connections", "must be positive");
    if (c.max_connections_per_ip == 0) m.error("max_connections_per_ip", "must be positive");
    if (c.max_header_bytes < 1024 || c.max_header_bytes > 1024 * 1024) {
        m.error("max_header_bytes", "must be from 1KiB to 1MiB");
    }
    if (c.threads == 0 || c.threads > 64) m.error("threads", "must be from 1 to 64");
}

void parse_storage(YamlMap m, StorageConfig& c) {
    m.get_path("path", c.path, true);
    m.get("busy_timeout", c.busy_timeout);
    m.get("max_pending_writes", c.max_pending_writes);
    m.get("retry_after", c.retry_after);
    m.get("retention", c.retention);
    m.get("rejected_retention", c.rejected_retention);
    m.get("prune_interval", c.prune_interval);
}

void parse_ingest(YamlMap m, IngestConfig& c) {
    secret_list(m, "secrets", c.secrets);
    secret_list(m, "standard_webhooks_secrets", c.standard_webhooks_secrets);
    m.get("max_clock_skew", c.max_clock_skew);
    if (c.secrets.empty() && c.standard_webhooks_secrets.empty()) {
        m.error(
            "secrets",
            "at least one secret (ingest.secrets or ingest.standard_webhooks_secrets) is required");
    }
}

void parse_trust(YamlMap m, TrustConfig& c) {
    m.get("upstream_repo", c.upstream_repo);
    m.get("downstream_repo", c.downstream_repo, true);
    m.get("senders", c.senders);
    get_enum(m, "fork_policy", c.fork_policy);
    m.get("fork_labels", c.fork_labels);
    m.get("events", c.events);

    for (const auto& e : c.events) {
        check_enum(m, "events", e, {"pull_request", "push", "pytorch-pr-trigger", "pytorch-crcr"});
    }
    if (c.fork_policy == ForkPolicy::require_label && c.fork_labels.empty()) {
        m.error("fork_labels", "required when fork_policy is require_label");
    }
}

void parse_runner(YamlMap& m, RunnerConfig& r) {
    m.get("name", r.name, true);
    m.get("labels", r.labels);
    m.get("env", r.env);
    m.get("devices", r.devices);
    m.get("health_check", r.health_check);
    m.get("device_model", r.device_model);
}

/// `executor` picks one of `executors`; each executor's own section, `execution.<name>`, is
/// read by that executor's parser (a section without one is an error), the chosen one's kept.
void parse_executor(YamlMap& m, ExecutionConfig& c, const std::vector<ExecutorKeys>& executors) {
    m.get("executor", c.executor);
    std::string names;
    for (const auto& e : executors) names += (names.empty() ? "" : " | ") + e.name;
    const bool known = std::any_of(executors.begin(), executors.end(),
                                   [&](const auto& e) { return e.name == c.executor; });
    if (!known) m.error("executor", "'" + c.executor + "' is not one of " + names);
    for (const auto& e : executors) {
        const bool chosen = e.name == c.executor;
        if (!m.has(e.name)) {
            if (chosen && e.section_required)
                m.error(e.name, "required when executor is " + e.name);
            continue;
        }
        if (!e.parse) {
            m.raw(e.name);
            m.error(e.name, "the " + e.name + " executor has no keys of its own");
            continue;
        }
        YamlMap section = m.child(e.name);
        auto parsed = e.parse(section);
        if (chosen) c.executor_section = std::move(parsed);
    }
}

void parse_execution(YamlMap m, ExecutionConfig& c, const std::vector<ExecutorKeys>& executors) {
    parse_executor(m, c, executors);
    get_enum(m, "rerun", c.rerun);
    m.get("command", c.command);
    // A relative program path (with a slash) is relative to the configuration file.
    if (!c.command.empty() && c.command.front().find('/') != std::string::npos &&
        c.command.front().front() != '/') {
        c.command.front() = (m.base_dir() / c.command.front()).lexically_normal().string();
    }
    m.get_path("work_root", c.work_root);
    m.get("env", c.env);
    get_enum(m, "isolation", c.isolation);
    m.get("user", c.user);
    m.get("stall_timeout", c.stall_timeout);
    m.get("device_wait", c.device_wait);
    m.get("health_interval", c.health_interval);
    m.get("card_release_timeout", c.card_release_timeout);
    m.get("lease_ttl", c.lease_ttl);
    m.get_size("max_log_bytes", c.max_log_bytes);
    m.get_size("min_free_bytes", c.min_free_bytes);
    m.get("infra_retries", c.infra_retries);
    m.get("flaky_reruns", c.flaky_reruns);
    m.get("keep_failed_workspaces", c.keep_failed_workspaces);
    m.get_path("backend_dir", c.backend_dir);
    m.get("driver_version_command", c.driver_version_command);
    get_enum(m, "network", c.network);
    m.get_path("sandbox_socket", c.sandbox_socket);
    if (c.network == Network::none && c.isolation != Isolation::bwrap)
        m.error("network", "none needs isolation: bwrap");
    if (c.isolation == Isolation::user && !c.user)
        m.error("user", "required when isolation is user");
    if (c.sandbox_socket && (c.isolation != Isolation::bwrap || c.executor != "local")) {
        m.error("sandbox_socket", "only with isolation: bwrap and executor: local");
    }
    // Every job's sandbox hides the socket's folder: it cannot be the root folder.
    if (c.sandbox_socket && c.sandbox_socket->parent_path() == c.sandbox_socket->root_path()) {
        m.error("sandbox_socket",
                "must lie in a folder of its own (the jobs' sandbox hides that folder), not in /");
    }
}

/// `build:`; `execution` is read first (key_env names its env, the executor decides the slots).
void parse_build(YamlMap m, Config& c, const std::vector<ExecutorKeys>& executors) {
    if (!m.present()) return;
    BuildConfig b;
    m.get("command", b.command, true);
    if (!b.command.empty() && b.command.front().find('/') != std::string::npos &&
        b.command.front().front() != '/') {
        b.command.front() = (m.base_dir() / b.command.front()).lexically_normal().string();
    }
    m.get("timeout", b.timeout);
    m.get("stall_timeout", b.stall_timeout);
    m.get("slots", b.slots);
    m.get_path("cache_dir", b.cache_dir, true);
    m.get_size("cache_max_bytes", b.cache_max_bytes);
    m.get("key_env", b.key_env);
    if (m.has("ccache")) {
        YamlMap cc = m.child("ccache");
        BuildCcacheConfig ccache;
        cc.get_path("dir", ccache.dir, true);
        cc.get_size("max_size", ccache.max_size);
        b.ccache = ccache;
    }
    if (b.timeout.count() <= 0) m.error("timeout", "must be positive");
    if (b.stall_timeout.count() <= 0) m.error("stall_timeout", "must be positive");
    if (b.slots == 0) m.error("slots", "must be at least 1");
    if (b.cache_max_bytes == 0) m.error("cache_max_bytes", "must be positive");
    for (const auto& name : b.key_env) {
        if (!c.execution.env.count(name))
            m.error("key_env", "'" + name + "' is not a variable of execution.env");
    }
    for (const auto& r : c.runners) {
        if (r.name.rfind("build-", 0) == 0)
            m.error("slots",
                    "the runner '" + r.name + "' has a build slot's name (build-N); rename it");
    }
    for (const auto& e : executors) {
        if (e.name == c.execution.executor) {
            if (e.parse_build) b.executor_section = e.parse_build(m, b, c.execution);
            continue;
        }
        for (const auto& key : e.build_keys) {
            if (!m.has(key)) continue;
            m.raw(key);
            m.error(key, "only with executor: " + e.name);
        }
    }
    if (!c.execution.work_root.empty() &&
        b.cache_dir.lexically_normal() == c.execution.work_root.lexically_normal())
        m.error("cache_dir", "must not be execution.work_root itself");
    c.build = std::move(b);
}

void parse_patterns(YamlMap& m, const std::string& key, Strings& out) {
    if (!m.has(key)) {
        m.raw(key);
        return;  // the defaults, known to be valid
    }
    m.get(key, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
        // Compiled as the classifier compiles it (RE2: no back-references, no look-around).
        if (auto re = log_pattern::compile(out[i]); !re) {
            m.error(key, "entry " + std::to_string(i) + ": " + re.error().message);
        }
    }
}

/// A request budget: a list of windows `{requests, per}`; given, it replaces the defaults (an
/// empty list: no budget).
void parse_budget(YamlMap& m, std::vector<BudgetWindowConfig>& out) {
    if (!m.has("budget")) return;
    out.clear();
    m.each("budget", [&](YamlMap& w) {
        BudgetWindowConfig b;
        std::optional<std::int64_t> requests;
        w.get("requests", requests);
        w.get("per", b.per);
        if (!requests || *requests < 1)
            w.error("requests", "a window needs requests: a whole number of at least 1");
        else
            b.requests = *requests;
        if (b.per < std::chrono::seconds(1) || b.per > std::chrono::hours(24))
            w.error("per", "a window needs per: from 1s to 24h (the request log keeps a day)");
        out.push_back(b);
    });
}

void parse_report(YamlMap m, ReportConfig& c) {
    if (m.has("github")) {
        YamlMap g = m.child("github");
        GithubReportConfig gh;
        g.get("api_url", gh.api_url);
        check_https(g, "api_url", gh.api_url);
        while (!gh.api_url.empty() && gh.api_url.back() == '/') gh.api_url.pop_back();
        g.get("repo", gh.repo, true);
        g.get_path("token_file", gh.token_file);
        g.get_path("ca_file", gh.ca_file);
        g.get("app_id", gh.app_id);
        g.get_path("private_key_file", gh.private_key_file);
        g.get("installation_id", gh.installation_id);
        g.get("context_prefix", gh.context_prefix);
        g.get("mode", gh.mode);
        check_enum(g, "mode", gh.mode, {"advisory"});
        parse_budget(g, gh.budget);
        bool app = gh.app_id || gh.private_key_file || gh.installation_id;
        if (gh.token_file && app) {
            g.error("token_file",
                    "give either token_file or a GitHub App (app_id, private_key_file, "
                    "installation_id), not both");
        } else if (!gh.token_file && !app) {
            g.error("token_file",
                    "required (or a GitHub App: app_id, private_key_file, installation_id)");
        } else if (app && !(gh.app_id && gh.private_key_file && gh.installation_id)) {
            g.error("app_id",
                    "a GitHub App needs all of app_id, private_key_file and installation_id");
        }
        c.github = gh;
    } else {
        m.raw("github");
    }
    m.get_path("file", c.file);
    if (m.has("crcr_callback")) {
        YamlMap cb = m.child("crcr_callback");
        CrcrCallbackConfig cc;
        cb.get("url", cc.url);
        cb.get_path("file", cc.file);
        check_https(cb, "url", cc.url);
        cb.get_path("token_file", cc.token_file);
        cb.get("token_command", cc.token_command);
        cb.get("token_ttl", cc.token_ttl);
        cb.get("workflow_name", cc.workflow_name);
        cb.get("scheduled_event_type", cc.scheduled_event_type);
        cb.get_path("ca_file", cc.ca_file);
        parse_budget(cb, cc.budget);
        check_enum(cb, "scheduled_event_type", cc.scheduled_event_type, {"nightly", "periodic"});
        if (cc.url.empty() == !cc.file.has_value())
            cb.error("url", "give either url (the relay) or file, one of them");
        if (!cc.url.empty() && cc.token_file.has_value() == !cc.token_command.empty()) {
            cb.error("token_command",
                     "give either token_command (an OIDC token for the relay) or token_file, one "
                     "of them");
        }
        if (cc.workflow_name.empty()) cb.error("workflow_name", "must not be empty");
        // A relative program path (with a slash) is relative to the configuration file.
        if (!cc.token_command.empty() && cc.token_command.front().find('/') != std::string::npos &&
            cc.token_command.front().front() != '/') {
            cc.token_command.front() =
                (cb.base_dir() / cc.token_command.front()).lexically_normal().string();
        }
        c.crcr_callback = cc;
    } else {
        m.raw("crcr_callback");
    }
    m.get("context_prefix", c.context_prefix);
    m.get("target_url", c.target_url);
    m.get("retry_initial", c.retry_initial);
    m.get("retry_max", c.retry_max);
    m.get("timeout", c.timeout);
    m.get("min_interval", c.min_interval);
}

void parse_admin(YamlMap m, AdminConfig& c, const ServerConfig& server) {
    static const std::regex k_hex64("^[0-9a-f]{64}$");
    m.each("tokens", [&](YamlMap& t) {
        AdminToken tok;
        t.get("name", tok.name, true);
        t.get("sha256", tok.sha256, true);
        t.get("role", tok.role, true);
        std::transform(tok.sha256.begin(), tok.sha256.end(), tok.sha256.begin(), ::tolower);
        if (!tok.sha256.empty() && !std::regex_match(tok.sha256, k_hex64)) {
            t.error("sha256", "must be the 64-character hex SHA-256 of the token");
        }
        if (!tok.role.empty()) check_enum(t, "role", tok.role, {"read", "admin"});
        c.tokens.push_back(std::move(tok));
    });
    if (m.has("listen")) {
        parse_listen(m, "listen", c.listen_host, c.listen_port);
        if (!c.listen_host.empty()) m.get("listen", c.listen);
        if (c.listen && !server.tls && !is_loopback(c.listen_host)) {
            m.error("listen",
                    "plain HTTP is only allowed on a loopback address (the admin listener uses "
                    "server.tls)");
        }
        if (c.listen && c.listen_host == server.host && c.listen_port == server.port &&
            server.port != 0) {
            m.error("listen", "must differ from server.listen");
        }
    } else {
        m.raw("listen");
    }
    m.get("metrics_public", c.metrics_public);
    m.get("ui_public", c.ui_public);
}

void parse_recovery(YamlMap m, Config& c) {
    if (!m.has("github_hook")) {
        m.raw("github_hook");
        if (m.has("interval") || m.has("lookback"))
            m.error("github_hook", "required: the hook whose deliveries to recover");
        m.raw("interval");
        m.raw("lookback");
        return;
    }
    RecoveryConfig r;
    {
        YamlMap h = m.child("github_hook");
        h.get("repo", r.repo);
        std::optional<std::int64_t> hook_id;
        h.get("hook_id", hook_id);
        r.hook_id = hook_id.value_or(0);
        h.get("app", r.app);
        if (r.app && (!r.repo.empty() || r.hook_id != 0))
            h.error("app", "give either {repo, hook_id} or {app: true}");
        if (!r.app && (r.repo.empty() || r.hook_id <= 0)) {
            h.error("repo",
                    "required with hook_id (a positive number), or app: true for the GitHub App's "
                    "own hook");
        }
    }
    m.get("interval", r.interval);
    m.get("lookback", r.lookback);
    if (r.interval.count() <= 0) m.error("interval", "must be positive");
    if (r.lookback.count() <= 0 || r.lookback > std::chrono::hours(24 * 30))
        m.error("lookback", "must be from 1s to 30d");
    // Recovery speaks to GitHub with the statuses' credentials.
    if (!c.report.github) {
        m.error("github_hook", "needs report.github (its api_url and credentials)");
    } else if (r.app && !c.report.github->app_id) {
        m.error("github_hook",
                "app: true needs a GitHub App in report.github (app_id, private_key_file, "
                "installation_id)");
    }
    c.recovery = r;
}

}  // namespace

Loaded parse(const std::string& yaml_text, const Path& base_dir,
             const std::vector<ExecutorKeys>& executors, const Path& source) {
    Loaded out;
    YAML::Node root;
    try {
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
        out.errors.push_back("(yaml): " + e.msg + " (line " + std::to_string(e.mark.line + 1) +
                             ")");
        return out;
    }
    ParseContext ctx{&out.errors, base_dir};
    if (!root.IsMap()) {
        out.errors.push_back("(top): the configuration must be a YAML mapping");
        return out;
    }
    Config c;
    c.source = source;
    {
        YamlMap top(ctx, root, "");
        top.get("log_level", c.log_level);
        check_enum(top, "log_level", c.log_level, {"trace", "debug", "info", "warn", "error"});
        parse_server(top.child("server"), c.server);
        parse_storage(top.child("storage"), c.storage);
        parse_ingest(top.child("ingest"), c.ingest);
        parse_trust(top.child("trust"), c.trust);
        {
            YamlMap up = top.child("upstream");
            up.get_path("mirror", c.upstream.mirror);
            up.get("remote", c.upstream.remote);
            // A local path (no URL scheme, no scp-like "host:") is relative to this file, as
            // every other path in it.
            if (const auto& r = c.upstream.remote;
                !r.empty() && r.find("://") == std::string::npos &&
                r.find(':') == std::string::npos && r.front() != '/') {
                std::filesystem::path p;
                up.get_path("remote", p);
                c.upstream.remote = p.string();
            }
            up.get("git_timeout", c.upstream.git_timeout);
        }
        {
            YamlMap sel = top.child("selection");
            sel.get_path("rules", c.selection.rules);
            sel.get("concurrency", c.selection.concurrency);
            sel.get("post_merge", c.selection.post_merge);
            sel.get("reuse_window", c.selection.reuse_window);
            for (const auto& [event, key] : c.selection.concurrency) {
                check_enum(sel, "concurrency", key, {"pr", "branch", "none"});
                check_enum(sel, "concurrency", event,
                           {"pull_request", "push", "schedule", "manual"});
            }
        }
        std::set<std::string> names;
        top.each("runners", [&](YamlMap& r) {
            RunnerConfig rc;
            parse_runner(r, rc);
            if (!rc.name.empty() && !names.insert(rc.name).second)
                r.error("name", "duplicate runner name '" + rc.name + "'");
            c.runners.push_back(std::move(rc));
        });
        parse_execution(top.child("execution"), c.execution, executors);
        {
            YamlMap cl = top.child("classify");
            get_enum(cl, "base_check", c.classify.base_check);
            cl.get("base_window", c.classify.base_window);
            parse_patterns(cl, "device_patterns", c.classify.device_patterns);
            parse_patterns(cl, "infra_patterns", c.classify.infra_patterns);
        }
        {
            YamlMap b = top.child("bisect");
            b.get("max_runs", c.bisect.max_runs);
            b.get("refs", c.bisect.refs);
            for (const auto& r : c.bisect.refs)
                if (r.empty() || r.find_first_of(" ~^:?*[\\") != std::string::npos)
                    b.error("refs", "'" + r + "' is not a branch name");
        }
        parse_build(top.child("build"), c, executors);
        parse_report(top.child("report"), c.report);
        parse_admin(top.child("admin"), c.admin, c.server);
        parse_recovery(top.child("recovery"), c);
    }
    if (out.errors.empty()) out.config = std::move(c);
    return out;
}

Loaded load(const Path& path, const std::vector<ExecutorKeys>& executors) {
    auto text = read_file(path, 4 * 1024 * 1024);
    if (!text) {
        Loaded out;
        out.errors.push_back("(file): " + text.error().message);
        return out;
    }
    Path abs = std::filesystem::absolute(path);
    return parse(*text, abs.parent_path(), executors, abs);
}

}  // namespace crcrd::config
