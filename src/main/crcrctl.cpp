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

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("crcrctl: the operator's command line for crcrd (docs/operations.md).", "crcrctl");
    app.set_version_flag("--version", "crcrctl " CRCRD_VERSION);
    app.require_subcommand(1);
    app.fallthrough();  // inherited: the options below may also follow the command
    app.footer(
        "Exit status: 0 done, 1 other failure, 2 usage (also an argument the daemon refuses with "
        "400),\n"
        "3 daemon unreachable or TLS failure, 4 unauthorised or forbidden, 5 not found.\n"
        "COMMAND --help shows a command's options.");

    crcrd::app::AdminCliOptions conn;
    std::string token_file, cacert;
    app.add_option(
           "--url", conn.url,
           "the daemon's base URL, https://HOST:PORT; each command appends its route (/api/v1/..., "
           "/webhook; a URL ending in /webhook means the same daemon)")
        ->capture_default_str();
    auto* token_opt =
        app.add_option("--token-file", token_file, "a file holding an admin API bearer token")
            ->check(CLI::ExistingFile);
    auto* cacert_opt =
        app.add_option("--cacert", cacert, "trust this PEM CA bundle (default: the system's)")
            ->check(CLI::ExistingFile);

    // send
    crcrd::app::SendOptions send_opts;
    std::string secret_file, event_file, send_event, delivery_id;
    auto* send = app.add_subcommand(
        "send",
        "sign EVENT.json like GitHub or a Standard Webhooks relay and post it to "
        "<url>/webhook; prints the answer");
    send->add_option("--scheme", send_opts.scheme, "the signature scheme")
        ->check(CLI::IsMember({"github", "standard-webhooks"}))
        ->capture_default_str();
    send->add_option("--secret-file", secret_file,
                     "the webhook secret (a whsec_ secret for standard-webhooks)")
        ->required()
        ->check(CLI::ExistingFile);
    auto* send_event_opt =
        send->add_option("--event", send_event, "X-GitHub-Event (default: guessed from the body)");
    auto* delivery_opt =
        send->add_option("--delivery-id", delivery_id, "the delivery id (default: a random UUID)");
    send->add_option("EVENT.json", event_file, "the event body")
        ->required()
        ->check(CLI::ExistingFile);

    // explain
    crcrd::app::ExplainOptions explain_opts;
    std::string rules;
    auto* explain =
        app.add_subcommand("explain",
                           "print the selection a run would get for these changed paths "
                           "(offline: no daemon)");
    explain->add_option("--rules", rules, "the selection rules file")
        ->required()
        ->check(CLI::ExistingFile);
    explain
        ->add_option("--changed-files", explain_opts.changed_files,
                     "a file with one path per line, or - for stdin")
        ->required();
    explain
        ->add_option("--event", explain_opts.event,
                     "pull_request, push, schedule, manual or bisect")
        ->capture_default_str();
    explain->add_flag("--json", explain_opts.json, "print the selection as stored (JSON)");

    // The admin commands.
    std::map<std::string, CLI::App*> groups;
    std::deque<AdminParsed> admin;
    for (const auto& spec : k_admin) {
        CLI::App* parent = &app;
        if (spec.group) {
            auto [it, added] = groups.try_emplace(spec.group, nullptr);
            if (added) {
                std::string actions;
                for (const auto& s : k_admin)
                    if (s.group && s.group == std::string(spec.group))
                        actions += (actions.empty() ? "" : ", ") + std::string(s.name);
                it->second =
                    app.add_subcommand(spec.group, std::string(spec.group) + ": " + actions);
                it->second->require_subcommand(1);
            }
            parent = it->second;
        }
        auto& p = admin.emplace_back(
            AdminParsed{&spec, parent->add_subcommand(spec.name, spec.description), {}, {}});
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
        if (spec.command == AdminCommand::runs_trigger) {
            p.app->add_option("--sha", p.req.sha, "the commit (40 hex digits)")->required();
            p.app->add_option("--tier", p.req.tiers,
                              "a tier to run (repeatable; default: every tier)");
        }
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
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
    if (*token_opt) conn.token_file = token_file;
    if (*cacert_opt) conn.cacert = cacert;

    try {
        if (*send) {
            send_opts.url = conn.url;
            send_opts.cacert = conn.cacert;
            send_opts.secret_file = secret_file;
            send_opts.event_file = event_file;
            if (*send_event_opt) send_opts.event = send_event;
            if (*delivery_opt) send_opts.delivery_id = delivery_id;
            return crcrd::app::send_event(send_opts, std::cout, std::cerr);
        }
        if (*explain) {
            explain_opts.rules = rules;
            return crcrd::app::explain(explain_opts, std::cin, std::cout, std::cerr);
        }
        for (auto& p : admin) {
            if (!*p.app) continue;
            for (const auto& [param, opt] : p.query)
                if (*opt) p.req.query.emplace_back(param, opt->as<std::string>());
            if (p.list) p.req.command = AdminCommand::recover_list;
            return crcrd::app::admin_command(p.req, conn, std::cout, std::cerr);
        }
    } catch (const std::exception& e) {
        std::cerr << "crcrctl: " << e.what() << "\n";
        return crcrd::app::k_exit_failure;
    }
    std::cerr << "crcrctl: no command\n";
    return crcrd::app::k_exit_usage;
}
