#pragma once
// The sandbox launcher (docs/operations.md, "The sandbox launcher"). Under the packaged units
// the daemon's own unit may not make namespaces or mount, so bubblewrap cannot start there:
// it starts in crcrd-sandbox@.service, a socket-activated unit of its own (one instance per
// job, Accept=yes on a SOCK_SEQPACKET socket only the crcrd user can open).
//
// In the job's process tree `crcrd --sandbox-connect SOCKET -- bwrap ARGS...` stands where
// bubblewrap stood: it hands its stdin, stdout and stderr (the supervisor's log pipe) and the
// argv, environment and folder to the launcher, forwards the signals the job's init sends it,
// and ends as the command ended (its exit code, or the same signal). The launcher runs
// bubblewrap with those descriptors, in a process group of its own, and kills that group when
// the client goes away. The supervisor (supervisor.hpp) sees no difference.
//
// The protocol, one message per datagram: the client's request ("crcrd-sandbox/1", then
// argc, the arguments, envc, the variables and the folder, each NUL-terminated, with exactly
// three descriptors as SCM_RIGHTS); the launcher's "started PID", "exit STATUS" (a wait
// status) or "error MESSAGE"; the client's "signal N".

#include <string>
#include <vector>

namespace crcrd::exec::sandbox {

/// A request as the launcher reads it.
struct Request {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // "NAME=value"
    std::string cwd;
};

/// The request's bytes (without its descriptors). Never fails.
std::string encode(const Request& r);

/// Reads `bytes` into `out`; false with `why` set for a wrong version, counts that
/// do not match, a field without its terminator, an empty argv.
bool decode(const std::string& bytes, Request& out, std::string& why);

/// The client: connects to the SOCK_SEQPACKET socket `socket`, sends `argv` (argv[0] names
/// bubblewrap), `envp` and the current folder with descriptors 0, 1 and 2, forwards SIGTERM,
/// SIGINT and SIGHUP, and returns the wait status the launcher reported. A launcher that cannot
/// be reached or that refuses is an error on stderr and exit status 125 (<< 8). Blocks.
int run_client(const std::string& socket, const std::vector<std::string>& argv, char** envp);

/// The launcher, for one connection `fd` (a connected SOCK_SEQPACKET socket): checks that the
/// peer is the same user (or root), reads one request, runs `bwrap` (an absolute path; the
/// request's argv[0] must be "bwrap" or this path: the launcher starts nothing else) with its
/// descriptors, forwards "signal" messages to the command's process group, reports "exit", and
/// SIGKILLs the group when the peer goes away first. Returns the process exit code: 0 when the
/// command ran (whatever its status), 1 when the request was refused.
int serve(int fd, const std::string& bwrap);

/// `crcrd --sandbox-connect SOCKET -- ARGV...`: run_client, then exits as the command did
/// (its code, or the same signal). Returns 2 on a malformed command line.
int client_main(int argc, char** argv, char** envp);

/// `crcrd --sandbox-serve [BWRAP]` started by socket activation (Accept=yes: one connected
/// socket, LISTEN_FDS=1): serve on it with BWRAP (default /usr/bin/bwrap). Returns 2 when not
/// socket-activated.
int serve_main(int argc, char** argv);

}  // namespace crcrd::exec::sandbox
