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
// The protocol, one message per datagram: the client's request ("crcrd-sandbox/2", then
// argc, the arguments, envc, the variables and the folder, each NUL-terminated, with exactly
// four descriptors as SCM_RIGHTS: stdin, stdout, stderr and a pid descriptor of the client
// itself); the launcher's "started PID", "exit STATUS" (a wait status) or "error MESSAGE";
// the client's "signal N".
//
// Reaching the socket is not enough: a job's own processes run as the daemon's user. The
// launcher serves only a peer in its own pid namespace (a job's sandbox has its own) and,
// with --peer-cgroup, in crcrd.service's cgroup; the pid descriptor ties what it reads of the
// peer to the connection, so a pid reused meanwhile is refused (docs/security.md).

#include <sys/types.h>

#include <optional>
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
/// bubblewrap), `envp` and the current folder with descriptors 0, 1, 2 and a pid descriptor
/// of this process, forwards SIGTERM,
/// SIGINT and SIGHUP, and returns the wait status the launcher reported. A launcher that cannot
/// be reached or that refuses is an error on stderr and exit status 125 (<< 8). Blocks.
int run_client(const std::string& socket, const std::vector<std::string>& argv, char** envp);

/// What the launcher knows of the process at the other end of a connection.
struct PeerFacts {
    uid_t uid = static_cast<uid_t>(-1);  // SO_PEERCRED
    pid_t pid = 0;                       // SO_PEERCRED, in the launcher's pid namespace
    std::optional<pid_t>
        pidfd_pid;          // the pid the request's pid descriptor names; nullopt: none sent
    bool alive = false;     // that process outlived the reads below (its pid was not reused)
    int pid_ns_depth = -1;  // 0: the launcher's pid namespace; n: nested n deep; -1: unknown
    std::optional<bool>
        in_cgroup;  // in the policy's cgroup or below; nullopt: not asked, or unreadable
};

/// Whom the launcher serves: its own user (or root), in its own pid namespace, and in
/// `cgroup` (a cgroup v2 path such as /system.slice/crcrd.service) or below when set.
struct PeerPolicy {
    uid_t uid = static_cast<uid_t>(-1);
    std::optional<std::string> cgroup;
};

/// Why the peer described by `f` is refused, or nullopt when it is the daemon's own client.
/// Pure: the one place the rule lives.
std::optional<std::string> peer_refusal(const PeerFacts& f, const PeerPolicy& p);

/// Reads the facts of the peer of the connected socket `sock`, given the pid descriptor
/// `pidfd` its request carried (-1: none), looking it up in `cgroup` when set. Reads only the
/// descriptor's fdinfo and the cgroup file system, never the peer's /proc entry (closed to
/// the launcher when the peer is in another user namespace). Never fails: what cannot be read
/// stays unknown, which peer_refusal refuses.
PeerFacts read_peer(int sock, int pidfd, const std::optional<std::string>& cgroup);

/// This process's own uid, with `cgroup` as the peers' required cgroup.
PeerPolicy own_policy(std::optional<std::string> cgroup);

/// The launcher, for one connection `fd` (a connected SOCK_SEQPACKET socket): reads one
/// request, refuses a peer that `policy` refuses (peer_refusal), runs `bwrap` (an absolute
/// path; the request's argv[0] must be "bwrap" or this path: the launcher starts nothing
/// else) with its descriptors, forwards "signal" messages to the command's process group,
/// reports "exit", and SIGKILLs the group when the peer goes away first. A refusal is an
/// "error" message to the peer and a line on stderr. Returns the process exit code: 0 when the
/// command ran (whatever its status), 1 when the request was refused.
int serve(int fd, const std::string& bwrap, const PeerPolicy& policy);

/// `crcrd --sandbox-connect SOCKET -- ARGV...`: run_client, then exits as the command did
/// (its code, or the same signal). Returns 2 on a malformed command line.
int client_main(int argc, char** argv, char** envp);

/// `crcrd --sandbox-serve [--peer-cgroup PATH] [BWRAP]` started by socket activation
/// (Accept=yes: one connected socket, LISTEN_FDS=1): serve on it with BWRAP (default
/// /usr/bin/bwrap), to peers of this user and pid namespace (and cgroup PATH, when given).
/// Returns 2 on a malformed command line or when not socket-activated.
int serve_main(int argc, char** argv);

}  // namespace crcrd::exec::sandbox
