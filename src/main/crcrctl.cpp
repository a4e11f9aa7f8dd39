// crcrctl: the operator CLI (docs/operations.md). Parses the command line with CLI11 and hands
// over to crcrd::app; nothing else.
#include <CLI/CLI.hpp>

#include <deque>
#include <iostream>
#include <string>
#include <vector>

#include "crcrd/app/admin_cli.hpp"
#include "crcrd/app/explain.hpp"
#include "crcrd/app/send.hpp"

namespace {

using crcrd::app::AdminCommand;

/// An admin command as the command line spells it: `group name` (or just `name`), what it
/// does, and the name of its one positional argument (ID or NAME) if it takes one.
struct AdminSpec {
    const char* group;
    const char* name;
    AdminCommand command;
    const char* description;
    const char* target;
    bool listing;  // takes --json
};

const AdminSpec k_admin[] = {
    {"runs", "list", AdminCommand::runs_list, "runs, newest first", nullptr, true},
    {"runs", "show", AdminCommand::runs_show,
     "one run: its selection, jobs, statuses and bisection", "ID", true},
    {"runs", "cancel", AdminCommand::runs_cancel,
     "cancel a queued or running run and its open jobs", "ID", false},
    {"runs", "retry", AdminCommand::runs_retry, "a new run like a finished one", "ID", false},
    {"runs", "trigger", AdminCommand::runs_trigger,
     "a manual run of a commit (every tier unless --tier names some)", nullptr, false},
    {"jobs", "log", AdminCommand::jobs_log, "a job's log, printed as is", "ID", false},
    {"runners", "list", AdminCommand::runners_list,
     "runner slots, their state and last health check", nullptr, true},
    {"runners", "drain", AdminCommand::runners_drain, "give the slot no more jobs", "NAME", false},
    {"runners", "undrain", AdminCommand::runners_undrain, "give the slot jobs again", "NAME",
     false},
    {"deliveries", "list", AdminCommand::deliveries_list, "webhook deliveries and their verdicts",
     nullptr, true},
    {"outbox", "list", AdminCommand::outbox_list, "statuses and callbacks, and where each went",
     nullptr, true},
    {"outbox", "retry", AdminCommand::outbox_retry, "send a dead letter again", "ID", false},
    {nullptr, "recover", AdminCommand::recover,
     "a missed-delivery recovery pass now, printed when it ended (--list: the last passes)",
     nullptr, true},
    {nullptr, "misses", AdminCommand::misses,
     "scheduled-run failures that no PR or push run selected", nullptr, true},
    {"builds", "list", AdminCommand::builds_list, "the build stage's builds, newest first", nullptr,
     true},
    {"builds", "show", AdminCommand::builds_show, "one build and the end of its builder's log",
     "ID", true},
    {"builds", "evict", AdminCommand::builds_evict,
     "remove a ready build no queued or running job needs from the cache", "ID", false},
    {nullptr, "trunk", AdminCommand::trunk,
     "the trunk grid: a branch's push and scheduled runs by commit, a column per tier, and since "
     "when a tier is red",
     nullptr, true},
    {"tests", "history", AdminCommand::tests_history,
     "one test's results over the last runs that ran it, its flaky rate, first and last failure",
     "NAME", true},
    {"tests", "flaky", AdminCommand::tests_flaky, "the flakiest tests lately", nullptr, true},
    {nullptr, "stats", AdminCommand::stats,
     "by day: runs by class, pass rate per tier, wait for a card, slot utilisation, device time "
     "(--rebuild: make the roll-ups again from the history)",
     nullptr, true},
};

/// What one admin command's options were parsed into.
struct AdminParsed {
    const AdminSpec* spec;
    CLI::App* app;
    std::vector<std::pair<std::string, CLI::Option*>> query;  // API parameter, its option
    crcrd::app::AdminRequest req;
    bool list = false;  // recover --list
};

const CLI::Validator k_id(
    [](std::string& s) {
        bool digits =
            !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string() : "must be a positive integer, not '" + s + "'";
    },
    "ID", "id");

/// `crcrctl runs show` and so on: the deepest command the line named, for the error message.
std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (const CLI::App* a = &app; !a->get_subcommands().empty();) {
        a = a->get_subcommands().front();
        path += " " + a->get_name();
    }
    return path;
}

/// The connection options every daemon command shares; the files count only if given.
struct ConnectionArgs {
    crcrd::app::AdminCliOptions conn;
    std::string token_file, cacert;
    CLI::Option* token_opt = nullptr;
    CLI::Option* cacert_opt = nullptr;
};

/// `crcrctl send`: its options, and which of the optional ones were given.
struct SendArgs {
    crcrd::app::SendOptions opts;
    std::string secret_file, event_file, event, delivery_id;
    CLI::App* app = nullptr;
    CLI::Option* event_opt = nullptr;
    CLI::Option* delivery_opt = nullptr;
};

/// `crcrctl explain`: its options.
struct ExplainArgs {
    crcrd::app::ExplainOptions opts;
    std::string rules;
    CLI::App* app = nullptr;
};

void setup_app(CLI::App& app) {
    app.set_version_flag("--version", "crcrctl " CRCRD_VERSION);
    app.require_subcommand(1);
    app.fallthrough();  // inherited: the options below may also follow the command
    app.footer(
        "Exit status: 0 done, 1 other failure, 2 usage (also an argument the daemon refuses with "
        "400),\n"
        "3 daemon unreachable or TLS failure, 4 unauthorised or forbidden, 5 not found.\n"
        "COMMAND --help shows a command's options.");
}

void add_connection_options(CLI::App& app, ConnectionArgs& c) {
    app.add_option(
           "--url", c.conn.url,
           "the daemon's base URL, https://HOST:PORT; each command appends its route (/api/v1/..., "
           "/webhook; a URL ending in /webhook means the same daemon)")
        ->capture_default_str();
    c.token_opt =
        app.add_option("--token-file", c.token_file, "a file holding an admin API bearer token")
            ->check(CLI::ExistingFile);
    c.cacert_opt =
        app.add_option("--cacert", c.cacert, "trust this PEM CA bundle (default: the system's)")
            ->check(CLI::ExistingFile);
}

void add_send(CLI::App& app, SendArgs& s) {
    s.app = app.add_subcommand(
        "send",
        "sign EVENT.json like GitHub or a Standard Webhooks relay and post it to "
        "<url>/webhook; prints the answer");
    s.app->add_option("--scheme", s.opts.scheme, "the signature scheme")
        ->check(CLI::IsMember({"github", "standard-webhooks"}))
        ->capture_default_str();
    s.app
        ->add_option("--secret-file", s.secret_file,
                     "the webhook secret (a whsec_ secret for standard-webhooks)")
        ->required()
        ->check(CLI::ExistingFile);
    s.event_opt =
        s.app->add_option("--event", s.event, "X-GitHub-Event (default: guessed from the body)");
    s.delivery_opt = s.app->add_option("--delivery-id", s.delivery_id,
                                       "the delivery id (default: a random UUID)");
    s.app->add_option("EVENT.json", s.event_file, "the event body")
        ->required()
        ->check(CLI::ExistingFile);
}

void add_explain(CLI::App& app, ExplainArgs& e) {
    e.app = app.add_subcommand("explain",
                               "print the selection a run would get for these changed paths "
                               "(offline: no daemon)");
    e.app->add_option("--rules", e.rules, "the selection rules file")
        ->required()
        ->check(CLI::ExistingFile);
    e.app
        ->add_option("--changed-files", e.opts.changed_files,
                     "a file with one path per line, or - for stdin")
        ->required();
    e.app->add_option("--event", e.opts.event, "pull_request, push, schedule, manual or bisect")
        ->capture_default_str();
    e.app->add_flag("--json", e.opts.json, "print the selection as stored (JSON)");
}

/// The `runs`, `jobs`, ... subcommand for spec's group, added the first time a spec names it.
CLI::App* admin_group(CLI::App& app, std::map<std::string, CLI::App*>& groups,
                      const AdminSpec& spec) {
    auto [it, added] = groups.try_emplace(spec.group, nullptr);
    if (added) {
        std::string actions;
        for (const auto& s : k_admin)
            if (s.group && s.group == std::string(spec.group))
                actions += (actions.empty() ? "" : ", ") + std::string(s.name);
        it->second = app.add_subcommand(spec.group, std::string(spec.group) + ": " + actions);
        it->second->require_subcommand(1);
    }
    return it->second;
}

/// One admin command's positional argument and options; they bind into p.
void add_admin_options(AdminParsed& p) {
    const AdminSpec& spec = *p.spec;
    p.req.command = spec.command;
    if (spec.target) {
        auto* t = p.app
                      ->add_option(spec.target, p.req.target,
                                   spec.target == std::string("ID") ? "its id" : "its name")
                      ->required();
        if (spec.target == std::string("ID")) t->check(k_id);
    }
    for (const auto& q : crcrd::app::query_options(spec.command)) {
        p.query.emplace_back(q.param, p.app->add_option(q.names, q.help)->type_name(q.value));
    }
    if (spec.listing)
        p.app->add_flag("--json", p.req.json, "print the API's JSON instead of a table");
    if (spec.command == AdminCommand::recover)
        p.app->add_flag("--list", p.list, "list the last passes instead");
    if (spec.command == AdminCommand::stats)
        p.app->add_flag("--rebuild", p.list,
                        "make the daily roll-ups again from every run and job (admin)");
    if (spec.command == AdminCommand::runs_trigger) {
        p.app->add_option("--sha", p.req.sha, "the commit (40 hex digits)")->required();
        p.app->add_option("--tier", p.req.tiers, "a tier to run (repeatable; default: every tier)");
    }
}

/// Every k_admin command; a deque so that the options' bindings into its elements stay valid.
void add_admin_commands(CLI::App& app, std::deque<AdminParsed>& admin) {
    std::map<std::string, CLI::App*> groups;
    for (const auto& spec : k_admin) {
        CLI::App* parent = spec.group ? admin_group(app, groups, spec) : &app;
        auto& p = admin.emplace_back(
            AdminParsed{&spec, parent->add_subcommand(spec.name, spec.description), {}, {}});
        add_admin_options(p);
    }
}

/// The exit status for a failed parse, after printing why (or the help or version asked for).
int parse_failure(CLI::App& app, const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string why = e.what();
    // "crcrctl frobnicate" is reported as a missing subcommand: name the word instead.
    if (auto extra = app.remaining(true);
        !extra.empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
        why = "unknown command '" + extra.front() + "'";
    }
    std::cerr << command_path(app) << ": " << why << "\n"
              << "usage: " << command_path(app) << " --help\n";
    return crcrd::app::k_exit_usage;
}

int run_send(SendArgs& s, const crcrd::app::AdminCliOptions& conn) {
    s.opts.url = conn.url;
    s.opts.cacert = conn.cacert;
    s.opts.secret_file = s.secret_file;
    s.opts.event_file = s.event_file;
    if (*s.event_opt) s.opts.event = s.event;
    if (*s.delivery_opt) s.opts.delivery_id = s.delivery_id;
    return crcrd::app::send_event(s.opts, std::cout, std::cerr);
}

int run_admin(AdminParsed& p, const crcrd::app::AdminCliOptions& conn) {
    for (const auto& [param, opt] : p.query)
        if (*opt) p.req.query.emplace_back(param, opt->as<std::string>());
    if (p.list)
        p.req.command = p.req.command == AdminCommand::stats ? AdminCommand::stats_rebuild
                                                             : AdminCommand::recover_list;
    return crcrd::app::admin_command(p.req, conn, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("crcrctl: the operator's command line for crcrd (docs/operations.md).", "crcrctl");
    setup_app(app);
    ConnectionArgs c;
    add_connection_options(app, c);
    SendArgs send;
    add_send(app, send);
    ExplainArgs explain;
    add_explain(app, explain);
    std::deque<AdminParsed> admin;
    add_admin_commands(app, admin);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return parse_failure(app, e);
    }
    if (*c.token_opt) c.conn.token_file = c.token_file;
    if (*c.cacert_opt) c.conn.cacert = c.cacert;

    try {
        if (*send.app) return run_send(send, c.conn);
        if (*explain.app) {
            explain.opts.rules = explain.rules;
            return crcrd::app::explain(explain.opts, std::cin, std::cout, std::cerr);
        }
        for (auto& p : admin) {
            if (!*p.app) continue;
            return run_admin(p, c.conn);
        }
    } catch (const std::exception& e) {
        std::cerr << "crcrctl: " << e.what() << "\n";
        return crcrd::app::k_exit_failure;
    }
    std::cerr << "crcrctl: no command\n";
    return crcrd::app::k_exit_usage;
}
