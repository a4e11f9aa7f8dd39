// crcrctl: the operator CLI. Parses arguments and hands over to crcrd::app.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "crcrd/app/admin_cli.hpp"
#include "crcrd/app/explain.hpp"
#include "crcrd/app/send.hpp"

namespace {

void usage(std::ostream& os) {
    os << "usage: crcrctl [--version] [--url URL] [--token-file F] [--cacert F] COMMAND ...\n"
          "  send --scheme github|standard-webhooks --secret-file F [--url U] [--cacert F]\n"
          "       [--event NAME] [--delivery-id ID] EVENT.json\n"
          "       sign EVENT.json and post it (default URL https://127.0.0.1:8443/webhook)\n"
          "  explain --rules FILE --changed-files FILE|- [--event pull_request|push|schedule] [--json]\n"
          "       print the selection a run would get for these changed paths\n"
       << crcrd::app::admin_usage();
}

int send(const std::vector<std::string>& args) {
    crcrd::app::SendOptions o;
    bool have_secret = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
        const std::string* v = nullptr;
        if (a == "--scheme" && (v = value())) o.scheme = *v;
        else if (a == "--secret-file" && (v = value())) o.secret_file = *v, have_secret = true;
        else if (a == "--url" && (v = value())) o.url = *v;
        else if (a == "--cacert" && (v = value())) o.cacert = *v;
        else if (a == "--event" && (v = value())) o.event = *v;
        else if (a == "--delivery-id" && (v = value())) o.delivery_id = *v;
        else if (!a.empty() && a[0] != '-' && o.event_file.empty()) o.event_file = a;
        else {
            std::cerr << "crcrctl send: unexpected argument '" << a << "'\n";
            usage(std::cerr);
            return 2;
        }
    }
    if (!have_secret || o.event_file.empty()) {
        std::cerr << "crcrctl send: --secret-file and EVENT.json are required\n";
        usage(std::cerr);
        return 2;
    }
    return crcrd::app::send_event(o, std::cout, std::cerr);
}

int explain(const std::vector<std::string>& args) {
    crcrd::app::ExplainOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        bool has_value = i + 1 < args.size();
        if (a == "--rules" && has_value) o.rules = args[++i];
        else if (a == "--changed-files" && has_value) o.changed_files = args[++i];
        else if (a == "--event" && has_value) o.event = args[++i];
        else if (a == "--json") o.json = true;
        else {
            std::cerr << "crcrctl explain: unexpected argument '" << a << "'\n";
            usage(std::cerr);
            return 2;
        }
    }
    if (o.rules.empty() || o.changed_files.empty()) {
        std::cerr << "crcrctl explain: --rules and --changed-files are required\n";
        return 2;
    }
    return crcrd::app::explain(o, std::cin, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        usage(args.empty() ? std::cerr : std::cout);
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version") {
        std::cout << "crcrctl " CRCRD_VERSION "\n";
        return 0;
    }
    // Options of the admin commands come before the command.
    crcrd::app::AdminCliOptions admin;
    while (!args.empty() && (args[0] == "--url" || args[0] == "--token-file" || args[0] == "--cacert")) {
        if (args.size() < 2) {
            std::cerr << "crcrctl: " << args[0] << " needs a value\n";
            return 2;
        }
        if (args[0] == "--url") admin.url = args[1];
        if (args[0] == "--token-file") admin.token_file = args[1];
        if (args[0] == "--cacert") admin.cacert = args[1];
        args.erase(args.begin(), args.begin() + 2);
    }
    if (args.empty()) {
        usage(std::cerr);
        return 2;
    }
    std::string cmd = args[0];
    args.erase(args.begin());
    try {
        if (cmd == "send") return send(args);
        if (cmd == "explain") return explain(args);
        if (crcrd::app::is_admin_command(cmd)) return crcrd::app::admin_command(cmd, args, admin, std::cout, std::cerr);
    } catch (const std::exception& e) {
        std::cerr << "crcrctl: " << e.what() << "\n";
        return 1;
    }
    std::cerr << "crcrctl: unknown command '" << cmd << "'\n";
    usage(std::cerr);
    return 2;
}
