// crcrd: the daemon. Parses arguments and hands over to crcrd::app.
#include <cstring>
#include <iostream>
#include <string>

#include "crcrd/app/daemon.hpp"
#include "crcrd/exec/registry.hpp"
#include "crcrd/exec/sandbox_launcher.hpp"

namespace {
void usage(std::ostream& os) {
    os << "usage: crcrd [--config PATH] [--check-config] [--version]\n"
          "  --config PATH    configuration file (default /etc/crcrd/crcrd.yaml)\n"
          "  --check-config   validate the configuration and its secret files, then exit (0 ok, 2 "
          "errors)\n"
          "  --version        print the version\n";
    for (const auto& k : crcrd::exec::executors())
        if (k.node_entry) os << "  " << k.node_entry->usage << "\n";
    os << "  --sandbox-serve [--peer-cgroup PATH] [BWRAP]  (crcrd-sandbox@.service) start one "
          "job's bubblewrap\n"
          "                   for the daemon's own client (its pid namespace, and cgroup PATH)\n"
          "  --sandbox-connect SOCKET -- bwrap ARGS...  (the daemon, in a job) have the launcher "
          "run it\n";
}
}  // namespace

int main(int argc, char** argv, char** envp) {
    std::string config = "/etc/crcrd/crcrd.yaml";
    bool check = false;
    // An executor's other side (a Slurm node's `crcrd --slurm-job SPEC`): nothing of the daemon
    // is started.
    for (const auto& k : crcrd::exec::executors())
        if (k.node_entry && argc > 1 && argv[1] == k.node_entry->flag)
            return k.node_entry->main(argc, argv);
    // The sandbox launcher's two sides (docs/operations.md): nothing of the daemon either.
    if (argc > 1 && std::strcmp(argv[1], "--sandbox-connect") == 0)
        return crcrd::exec::sandbox::client_main(argc, argv, envp);
    if (argc > 1 && std::strcmp(argv[1], "--sandbox-serve") == 0)
        return crcrd::exec::sandbox::serve_main(argc, argv);
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--version") {
            std::cout << "crcrd " CRCRD_VERSION "\n";
            return 0;
        } else if (a == "--check-config") {
            check = true;
        } else if (a == "--config" && i + 1 < argc) {
            config = argv[++i];
        } else if (a.rfind("--config=", 0) == 0) {
            config = a.substr(std::strlen("--config="));
        } else if (a == "--help" || a == "-h") {
            usage(std::cout);
            return 0;
        } else {
            std::cerr << "crcrd: unknown argument '" << a << "'\n";
            usage(std::cerr);
            return 2;
        }
    }
    try {
        if (check) {
            int rc = crcrd::app::check_config(config, std::cerr);
            if (rc == 0) std::cout << config << ": ok\n";
            return rc;
        }
        return crcrd::app::run(config);
    } catch (const std::exception& e) {
        std::cerr << "crcrd: fatal: " << e.what() << "\n";
        return 1;
    }
}
