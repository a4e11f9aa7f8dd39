#include "support/slurm_cluster.hpp"

#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/temp_dir.hpp"

namespace crcrd {

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// `name` in PATH, else in /usr/sbin or /sbin (root's PATH may lack them); "" if nowhere.
std::string find_binary(const std::string& name) {
    std::vector<std::string> dirs;
    if (const char* path = std::getenv("PATH")) {
        std::stringstream ss(path);
        for (std::string d; std::getline(ss, d, ':');)
            if (!d.empty()) dirs.push_back(d);
    }
    dirs.insert(dirs.end(), {"/usr/sbin", "/sbin", "/usr/bin", "/bin"});
    for (const auto& d : dirs) {
        fs::path p = fs::path(d) / name;
        if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
    return "";
}

std::string short_hostname() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) throw std::runtime_error("gethostname failed");
    std::string h = buf;
    return h.substr(0, h.find('.'));
}

/// Two distinct free TCP ports: bound to port 0 together, so the kernel hands out different
/// ones, then released for the daemons. Another process could take one in between; the
/// daemons would then fail to start and the constructor says so.
std::pair<int, int> two_free_ports() {
    int fds[2];
    int ports[2];
    for (int i = 0; i < 2; ++i) {
        fds[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = 0;
        socklen_t len = sizeof a;
        if (fds[i] < 0 || ::bind(fds[i], reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw std::runtime_error("cannot find a free port");
        ports[i] = ntohs(a.sin_port);
    }
    ::close(fds[0]);
    ::close(fds[1]);
    return {ports[0], ports[1]};
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    std::size_t b = s.find_first_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b);
}

std::string tail_of(const fs::path& p, std::size_t lines) {
    std::ifstream in(p);
    std::deque<std::string> last;
    for (std::string l; std::getline(in, l);) {
        last.push_back(l);
        if (last.size() > lines) last.pop_front();
    }
    std::string out;
    for (const auto& l : last) out += l + "\n";
    return out;
}

bool munge_works() {
    return run_command({"sh", "-c", "munge -n | unmunge >/dev/null 2>&1"}) == 0;
}

/// Makes sure a munged answers: reuses one that runs (started by the system or by an earlier
/// test), else creates the key if missing and starts munged as user munge. It is left
/// running when the cluster stops: it is shared by every cluster on this machine and by
/// whatever else uses munge here, and starting it is idempotent for the next test.
void ensure_munged() {
    if (munge_works()) return;
    const passwd* pw = ::getpwnam("munge");
    if (!pw) throw std::runtime_error("no user munge (is the munge package installed?)");
    for (const char* d : {"/etc/munge", "/run/munge", "/var/lib/munge", "/var/log/munge"}) {
        fs::create_directories(d);
        if (::chown(d, pw->pw_uid, pw->pw_gid) != 0)
            throw std::runtime_error(std::string("cannot chown ") + d);
    }
    ::chmod("/etc/munge", 0700);
    ::chmod("/run/munge", 0755);  // clients must reach the socket in it
    const fs::path key = "/etc/munge/munge.key";
    if (!fs::exists(key)) {
        std::string out;
        if (run_command({find_binary("mungekey").empty() ? "false" : "mungekey", "--create",
                         "--keyfile", key.string()},
                        &out) != 0) {
            // Older munge has no mungekey: 1024 random bytes are a valid key.
            std::ifstream rnd("/dev/urandom", std::ios::binary);
            std::string bytes(1024, '\0');
            rnd.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            write_file(key, bytes, 0400);
        }
    }
    if (::chown(key.c_str(), pw->pw_uid, pw->pw_gid) != 0)
        throw std::runtime_error("cannot chown munge.key");
    ::chmod(key.c_str(), 0400);
    // munged forks into the background itself; two tests racing here both try, one wins.
    std::string out;
    run_command({"runuser", "-u", "munge", "--", find_binary("munged")}, &out);
    if (!eventually(munge_works, 10s)) throw std::runtime_error("munged does not answer: " + out);
}

}  // namespace

std::string SlurmCluster::skip_reason() {
    if (::geteuid() != 0) return "a Slurm cluster needs root (slurmd runs jobs as their user)";
    for (const char* b : {"slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "sinfo", "scancel",
                          "munged", "munge", "unmunge", "runuser"})
        if (find_binary(b).empty())
            return std::string(b) +
                   " not installed (apt-get install slurmctld slurmd slurm-client munge)";
    return "";
}

SlurmCluster::SlurmCluster(const fs::path& dir, int aiu)
    : m_dir(dir), m_node(short_hostname()), m_aiu(aiu) {
    std::tie(m_ctld_port, m_slurmd_port) = two_free_ports();
    fs::create_directories(m_dir / "state");
    fs::create_directories(m_dir / "spool");
    write_config();
    ensure_munged();
    start_controller();
    start_node_daemon();
    if (!wait_node_idle(60s))
        throw std::runtime_error("the Slurm node did not become idle (state '" + node_state() +
                                 "')\n" + log_tail());
}

SlurmCluster::~SlurmCluster() {
    // Jobs' slurmstepd processes are not our children and outlive slurmd: cancel every job
    // first and give the controller a moment to see them end.
    if (m_ctld && m_ctld->running()) {
        run({"scancel", "--partition=" + partition()});
        eventually(
            [&] {
                std::string out;
                if (run({"squeue", "--noheader", "--format=%i"}, &out) != 0 || trim(out).empty())
                    return true;
                std::this_thread::sleep_for(100ms);
                return false;
            },
            15s);
    }
    stop(m_slurmd);
    stop(m_ctld);
}

void SlurmCluster::write_config() const {
    const std::string d = m_dir.string();
    std::ostringstream c;
    c << "# Written by crcrd's tests (tests/support/slurm_cluster.cpp).\n"
      << "ClusterName=crcrdtest\n"
      // NodeAddr/SlurmctldHost addresses: the daemons need not resolve the hostname.
      << "SlurmctldHost=" << m_node << "(127.0.0.1)\n"
      << "SlurmctldPort=" << m_ctld_port << "\n"
      << "SlurmdPort=" << m_slurmd_port << "\n"
      << "SlurmUser=root\n"
      << "SlurmdUser=root\n"
      << "StateSaveLocation=" << d << "/state\n"
      << "SlurmdSpoolDir=" << d << "/spool\n"
      << "SlurmctldPidFile=" << d << "/slurmctld.pid\n"
      << "SlurmdPidFile=" << d << "/slurmd.pid\n"
      << "SlurmctldLogFile=" << d << "/slurmctld.log\n"
      << "SlurmdLogFile=" << d << "/slurmd.log\n"
      << "SlurmctldDebug=info\n"
      << "SlurmdDebug=info\n"
      << "AuthType=auth/munge\n"
      << "CredType=cred/munge\n"
      << "MpiDefault=none\n"
      << "ProctrackType=proctrack/linuxproc\n"
      << "TaskPlugin=task/none\n"
      << "SelectType=select/cons_tres\n"
      << "SelectTypeParameters=CR_Core\n"
      << "GresTypes=aiu\n"
      // The node claims 16 CPUs on a smaller machine; slurmd would otherwise refuse it.
      << "SlurmdParameters=config_overrides\n"
      << "JobCompType=jobcomp/filetxt\n"
      << "JobCompLoc=" << d << "/jobcomp.txt\n"
      << "KillWait=2\n"
      // 1, not 2: with 2 a node set DOWN by `scontrol update` is back IDLE within
      // milliseconds (slurmd answers the kill RPC and counts as a registration). With 1 it
      // stays down until state=resume; a node down for not responding returns by itself.
      << "ReturnToService=1\n"
      << "SlurmdTimeout=10\n"
      << "MessageTimeout=5\n"
      // Finished jobs stay in the controller's memory (scontrol show job) this long; 300 s is
      // Slurm's default, kept so tests see what production sees.
      << "MinJobAge=300\n"
      << "SchedulerParameters=sched_interval=1\n"
      << "NodeName=" << m_node << " NodeAddr=127.0.0.1 Gres=aiu:" << m_aiu
      << " CPUs=16 State=UNKNOWN\n"
      << "PartitionName=spyre Nodes=" << m_node
      << " Default=YES MaxTime=INFINITE State=UP\n"
      // A build stage's partition (docs/build.md): the same node, for its CPUs.
      << "PartitionName=" << build_partition() << " Nodes=" << m_node
      << " Default=NO MaxTime=INFINITE State=UP\n";
    write_file(conf_path(), c.str());
    write_file(m_dir / "gres.conf",
               "NodeName=" + m_node + " Name=aiu Count=" + std::to_string(m_aiu) + "\n");
}

std::vector<std::string> SlurmCluster::env() const {
    return {"SLURM_CONF=" + conf_path().string()};
}

int SlurmCluster::run(const std::vector<std::string>& argv, std::string* output) const {
    std::vector<std::string> full{"env"};
    for (const auto& e : env()) full.push_back(e);
    full.insert(full.end(), argv.begin(), argv.end());
    return run_command(full, output);
}

void SlurmCluster::start_controller() {
    m_ctld = std::make_unique<Process>(
        std::vector<std::string>{find_binary("slurmctld"), "-D", "-f", conf_path().string()},
        m_dir / "slurmctld.out", env());
}

void SlurmCluster::start_node_daemon() {
    if (m_slurmd && m_slurmd->running()) return;
    m_slurmd = std::make_unique<Process>(
        std::vector<std::string>{find_binary("slurmd"), "-D", "-f", conf_path().string()},
        m_dir / "slurmd.out", env());
}

void SlurmCluster::stop_node_daemon() {
    stop(m_slurmd);
}

void SlurmCluster::stop(std::unique_ptr<Process>& p) {
    if (!p) return;
    if (p->running()) {
        p->signal(SIGTERM);
        if (!p->wait_for(15s)) {
            p->signal(SIGKILL);
            p->wait_for(10s);
        }
    }
    p.reset();
}

std::string SlurmCluster::node_state() const {
    std::string out;
    if (run({"sinfo", "--noheader", "-N", "-n", m_node, "-p", partition(), "-O", "StateLong:0"},
            &out) != 0)
        return "";
    return trim(out);
}

bool SlurmCluster::wait_node_idle(std::chrono::milliseconds timeout) const {
    return eventually(
        [&] {
            if (node_state() == "idle") return true;
            std::this_thread::sleep_for(100ms);  // each poll is a process and an RPC
            return false;
        },
        timeout);
}

void SlurmCluster::set_node_state(const std::string& state, const std::string& reason) {
    std::vector<std::string> argv{"scontrol", "update", "nodename=" + m_node, "state=" + state};
    if (!reason.empty()) argv.push_back("reason=" + reason);
    std::string out;
    if (run(argv, &out) != 0)
        throw std::runtime_error("scontrol update state=" + state + " failed: " + out);
}

std::string SlurmCluster::log_tail(std::size_t lines) const {
    return "--- slurmctld.log\n" + tail_of(slurmctld_log(), lines) + "--- slurmd.log\n" +
           tail_of(slurmd_log(), lines) + "--- slurmctld.out\n" +
           tail_of(m_dir / "slurmctld.out", 10) + "--- slurmd.out\n" +
           tail_of(m_dir / "slurmd.out", 10);
}

}  // namespace crcrd
