// Normalisation reads the body with simdjson's DOM: a delivery is tens of KiB of upstream
// payload of which a dozen fields matter, and building a full nlohmann tree per request cost
// a third of the daemon's CPU under load (docs/performance.md).
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "crcrd/core/sha.hpp"
#include "crcrd/ingest/event.hpp"

namespace crcrd::ingest {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

/// The array inside an element already known to be one (a named value, so that a range-for
/// does not iterate a member of a destroyed temporary).
simdjson::dom::array as_array(element e) {
    simdjson::dom::array a;
    if (e.get_array().get(a) != simdjson::SUCCESS) return simdjson::dom::array();
    return a;
}

Error bad(const std::string& detail) {
    return make_error(Errc::bad_request, detail);
}
Error bad_sha() {
    return make_error(Errc::invalid_sha, "expected a full 40-character commit SHA");
}

bool all_zeros(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

/// Field access on one JSON object that names the path on a type mismatch. A JSON null is
/// treated as absent.
class Fields {
  public:
    Fields(element e, std::string path) : m_e(e), m_path(std::move(path)) {}

    std::optional<element> find(const char* key) const {
        if (!m_e.is_object()) return std::nullopt;
        element v;
        if (m_e.get_object().at_key(key).get(v) != simdjson::SUCCESS || v.is_null())
            return std::nullopt;
        return v;
    }
    bool has(const char* key) const { return find(key).has_value(); }
    std::string name(const char* key) const { return m_path.empty() ? key : m_path + "." + key; }

    Result<std::string> str(const char* key) const {
        auto v = find(key);
        if (!v) return bad("missing " + name(key));
        if (!v->is_string()) return bad(name(key) + " must be a string");
        return std::string(v->get_string().value_unsafe());
    }
    Result<std::optional<std::string>> opt_str(const char* key) const {
        auto v = find(key);
        if (!v) return std::optional<std::string>();
        if (!v->is_string()) return bad(name(key) + " must be a string");
        return std::optional<std::string>(std::string(v->get_string().value_unsafe()));
    }
    /// A PR number: an integer from 1 up (GitHub's numbers start at 1).
    Result<std::int64_t> pr_number(const char* key) const {
        auto v = find(key);
        if (!v) return bad("missing " + name(key));
        if (!v->is_int64() || v->get_int64().value_unsafe() < 1)
            return bad(name(key) + " must be a positive integer");
        return v->get_int64().value_unsafe();
    }
    Result<std::optional<std::int64_t>> opt_pr_number(const char* key) const {
        if (!find(key)) return std::optional<std::int64_t>();
        auto n = pr_number(key);
        if (!n) return n.error();
        return std::optional<std::int64_t>(*n);
    }
    Result<Fields> object(const char* key) const {
        auto v = find(key);
        if (!v) return bad("missing " + name(key));
        if (!v->is_object()) return bad(name(key) + " must be an object");
        return Fields(*v, name(key));
    }
    std::optional<Fields> opt_object(const char* key) const {
        auto v = find(key);
        if (!v || !v->is_object()) return std::nullopt;
        return Fields(*v, name(key));
    }
    Result<std::optional<std::vector<std::string>>> opt_strings(const char* key) const {
        auto v = find(key);
        if (!v) return std::optional<std::vector<std::string>>();
        if (!v->is_array()) return bad(name(key) + " must be a list of strings");
        std::vector<std::string> out;
        for (element e : as_array(*v)) {
            if (!e.is_string()) return bad(name(key) + " must be a list of strings");
            out.emplace_back(e.get_string().value_unsafe());
        }
        return std::optional<std::vector<std::string>>(std::move(out));
    }
    /// A string member or nullopt, whatever else is there.
    std::optional<std::string> loose_str(const char* key) const {
        auto v = find(key);
        if (!v || !v->is_string()) return std::nullopt;
        return std::string(v->get_string().value_unsafe());
    }

  private:
    element m_e;
    std::string m_path;
};

#define CRCRD_TRY(var, expr)              \
    auto var##_r = (expr);                \
    if (!var##_r) return var##_r.error(); \
    auto var = std::move(var##_r.value())

Status pin(std::string& sha) {
    if (!valid_sha(sha)) return bad_sha();
    sha = lower(sha);
    return Ok{};
}

/// Base SHAs may be all zeros (a new branch); that means "no base".
Status pin_base(std::string& sha) {
    if (sha.empty() || all_zeros(sha)) {
        sha.clear();
        return Ok{};
    }
    return pin(sha);
}

std::optional<std::string> repo_name(const std::optional<Fields>& repo) {
    return repo ? repo->loose_str("full_name") : std::nullopt;
}

/// A PR's `base.ref` and `base.sha` (pinned, or empty) into `e`; the base object, if any.
Result<std::optional<Fields>> read_base(const Fields& pr, Event& e) {
    auto base = pr.opt_object("base");
    if (!base) return std::optional<Fields>();
    CRCRD_TRY(base_ref, base->opt_str("ref"));
    CRCRD_TRY(base_sha, base->opt_str("sha"));
    e.base_ref = base_ref.value_or("");
    e.base_sha = base_sha.value_or("");
    if (auto s = pin_base(e.base_sha); !s) return s.error();
    return base;
}

Result<Event> pull_request(const Fields& p, Event e) {
    e.event = RunEvent::pull_request;
    CRCRD_TRY(action, p.str("action"));
    e.action = action;
    CRCRD_TRY(number, p.pr_number("number"));
    e.pr = number;
    e.upstream_repo = repo_name(p.opt_object("repository"));
    CRCRD_TRY(pr, p.object("pull_request"));
    if (action == "closed") {
        e.intent = Intent::cancel_pr;
        // The head it was closed at, when the payload has a valid one (for replays,
        // docs/ingest.md).
        if (auto head = pr.opt_object("head")) {
            CRCRD_TRY(head_sha, head->opt_str("sha"));
            if (head_sha && valid_sha(*head_sha)) e.sha = lower(*head_sha);
        }
        // Only a merged PR's merge commit is on the base branch; an unmerged PR's
        // merge_commit_sha is a test merge that goes away.
        auto merged = pr.find("merged");
        if (merged && merged->is_bool() && merged->get_bool().value_unsafe()) {
            CRCRD_TRY(merge, pr.opt_str("merge_commit_sha"));
            if (merge && valid_sha(*merge)) e.merge_commit_sha = lower(*merge);
            if (auto base = read_base(pr, e); !base) return base.error();
        }
        return e;
    }
    if (action != "opened" && action != "reopened" && action != "synchronize") {
        e.intent = Intent::ignore;
        e.reason = "pull_request action '" + action + "' does not start a run";
        return e;
    }
    CRCRD_TRY(head, pr.object("head"));
    CRCRD_TRY(sha, head.str("sha"));
    e.sha = sha;
    if (auto s = pin(e.sha); !s) return s.error();
    e.ref = "refs/pull/" + std::to_string(number) + "/head";
    e.head_repo = repo_name(head.opt_object("repo"));
    CRCRD_TRY(base, read_base(pr, e));
    if (base && !e.upstream_repo) e.upstream_repo = repo_name(base->opt_object("repo"));
    if (auto labels = pr.find("labels")) {
        if (!labels->is_array()) return bad(pr.name("labels") + " must be a list");
        for (element l : as_array(*labels)) {
            if (auto name = Fields(l, "").loose_str("name")) e.labels.push_back(*name);
        }
    }
    e.intent = Intent::run;
    return e;
}

Result<Event> push(const Fields& p, Event e) {
    e.event = RunEvent::push;
    e.action = "push";
    CRCRD_TRY(ref, p.str("ref"));
    e.ref = ref;
    e.upstream_repo = repo_name(p.opt_object("repository"));
    CRCRD_TRY(after, p.str("after"));
    auto deleted = p.find("deleted");
    if ((deleted && deleted->is_bool() && deleted->get_bool().value_unsafe()) || all_zeros(after)) {
        e.intent = Intent::ignore;
        e.reason = "push deletes " + ref;
        return e;
    }
    e.sha = after;
    if (auto s = pin(e.sha); !s) return s.error();
    CRCRD_TRY(before, p.opt_str("before"));
    e.base_sha = before.value_or("");
    if (auto s = pin_base(e.base_sha); !s) return s.error();
    // refs/tags/ciflow/<name>/<pr> carries a PR number.
    constexpr std::string_view k_ciflow = "refs/tags/ciflow/";
    if (ref.rfind(k_ciflow, 0) == 0) {
        auto slash = ref.rfind('/');
        std::string tail = ref.substr(slash + 1);
        if (slash > k_ciflow.size() && !tail.empty() && tail.size() < 12 &&
            std::all_of(tail.begin(), tail.end(), ::isdigit) && std::stoll(tail) > 0) {
            e.pr = std::stoll(tail);  // (a "0" is no PR: found by the fuzzer)
        }
    }
    if (auto commits = p.find("commits")) {
        if (!commits->is_array()) return bad(p.name("commits") + " must be a list");
        std::set<std::string, std::less<>> seen;
        std::vector<std::string> files;
        std::size_t count = 0;
        for (element c : as_array(*commits)) {
            ++count;
            for (const char* k : {"added", "modified", "removed"}) {
                auto list = Fields(c, "").find(k);
                if (!list || !list->is_array()) continue;
                for (element f : as_array(*list)) {
                    if (!f.is_string()) continue;
                    std::string_view path = f.get_string().value_unsafe();
                    if (seen.emplace(path).second) files.emplace_back(path);
                }
            }
        }
        e.push_files = std::move(files);
        e.push_commit_count = count;
    }
    e.intent = Intent::run;
    return e;
}

Result<Event> legacy_trigger(const Fields& cp, Event e) {
    e.form = "pytorch-pr-trigger";
    e.event = RunEvent::pull_request;
    e.action = "pytorch-pr-trigger";
    CRCRD_TRY(sha, cp.str("head_sha"));
    CRCRD_TRY(pr, cp.pr_number("pr_number"));
    CRCRD_TRY(head_ref, cp.opt_str("head_ref"));
    CRCRD_TRY(base_ref, cp.opt_str("base_ref"));
    e.sha = sha;
    if (auto s = pin(e.sha); !s) return s.error();
    e.pr = pr;
    e.ref = "refs/pull/" + std::to_string(pr) + "/head";
    e.base_ref = base_ref.value_or("");
    (void)head_ref;
    e.intent = Intent::run;
    return e;
}

Result<Event> direct(const Fields& cp, Event e) {
    e.form = "pytorch-crcr";
    e.action = "pytorch-crcr";
    CRCRD_TRY(sha, cp.str("upstream_sha"));
    CRCRD_TRY(files, cp.opt_strings("changed_files"));
    CRCRD_TRY(pr, cp.opt_pr_number("pr_number"));
    CRCRD_TRY(ref, cp.opt_str("ref"));
    CRCRD_TRY(base_sha, cp.opt_str("base_sha"));
    e.sha = sha;
    if (auto s = pin(e.sha); !s) return s.error();
    e.changed_files = std::move(files);
    e.pr = pr;
    e.event = pr ? RunEvent::pull_request : RunEvent::push;
    e.ref = ref.value_or(pr ? "refs/pull/" + std::to_string(*pr) + "/head" : "");
    e.base_sha = base_sha.value_or("");
    if (auto s = pin_base(e.base_sha); !s) return s.error();
    CRCRD_TRY(delivery, cp.opt_str("delivery_id"));
    e.crcr_delivery_id = delivery;
    e.intent = Intent::run;
    return e;
}

Result<Event> crcr_v1(const std::string& action, const Fields& cp, Event e) {
    e.form = "crcr-v1";
    CRCRD_TRY(event_type, cp.str("event_type"));
    if (event_type != action) {
        return bad("client_payload.event_type '" + event_type +
                   "' does not match the dispatch action '" + action + "'");
    }
    CRCRD_TRY(delivery, cp.opt_str("delivery_id"));
    e.crcr_delivery_id = delivery;
    CRCRD_TRY(payload, cp.object("payload"));
    return action == "pull_request" ? pull_request(payload, std::move(e))
                                    : push(payload, std::move(e));
}

/// The dispatch forms: a repository_dispatch webhook (`action`) or a create-dispatch request
/// body (`event_type`), both with `client_payload`.
Result<Event> dispatch(const Fields& body, const std::string& action, Event e) {
    CRCRD_TRY(cp, body.object("client_payload"));
    if (action == "pull_request" || action == "push") return crcr_v1(action, cp, std::move(e));
    if (action == "pytorch-pr-trigger") return legacy_trigger(cp, std::move(e));
    if (action == "pytorch-crcr") return direct(cp, std::move(e));
    e.form = "dispatch";
    e.action = action;
    e.intent = Intent::ignore;
    e.reason = "dispatch action '" + action + "' is not a CRCR event";
    return e;
}

}  // namespace

Result<Event> normalize(std::string_view github_event, std::string_view body) {
    // One parser per thread: its buffers are reused from one delivery to the next.
    thread_local simdjson::dom::parser parser;
    element root;
    if (auto err = parser.parse(body.data(), body.size()).get(root); err) {
        return bad(std::string("body is not valid JSON: ") + simdjson::error_message(err));
    }
    if (!root.is_object()) return bad("the body must be a JSON object");
    Fields f(root, "");
    Event e;
    if (github_event == "ping" || (github_event.empty() && f.has("zen") && f.has("hook_id"))) {
        e.form = "ping";
        e.intent = Intent::ping;
        return e;
    }
    if (github_event == "repository_dispatch" ||
        (github_event.empty() && f.has("client_payload"))) {
        if (auto a = f.find("action")) {
            if (!a->is_string()) return bad("action must be a string");
            // A repository_dispatch webhook: the downstream repo and sender are checked by trust.
            e.downstream_repo = repo_name(f.opt_object("repository"));
            if (!e.downstream_repo) return bad("missing repository.full_name");
            if (auto s = f.opt_object("sender")) e.sender = s->loose_str("login");
            return dispatch(f, std::string(a->get_string().value_unsafe()), std::move(e));
        }
        CRCRD_TRY(type, f.str("event_type"));
        return dispatch(f, type, std::move(e));
    }
    if (github_event == "pull_request" || github_event == "push") {
        e.form = "github";
        return github_event == "pull_request" ? pull_request(f, std::move(e))
                                              : push(f, std::move(e));
    }
    if (github_event.empty())
        return bad("unrecognised body: expected a dispatch with client_payload");
    e.form = "github";
    e.intent = Intent::ignore;
    e.reason = "GitHub event '" + std::string(github_event) + "' is not handled";
    return e;
}

}  // namespace crcrd::ingest
