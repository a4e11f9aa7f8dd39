// A pull request's test against the sandbox launcher, as the packaged set-up runs it: crcrd as
// an unprivileged user with execution.sandbox_socket, the launcher socket-activated by
// systemd's systemd-socket-activate as the same user, a real upstream mirror. The test command
// is the attacker: it asks the launcher for `bwrap --bind / /` with crcrd's own client and with
// a minimal client of the wire protocol, on the configured socket and on a second path to the
// same socket (a hard link in the command's folder, which the sandbox shows), and it tries to
// plant a git hook in the mirror that the daemon's next checkout would run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "crcrd/core/files.hpp"
#include "support/ci_script.hpp"
#include "support/daemon.hpp"
#include "support/state.hpp"

namespace crcrd {
namespace {

using nlohmann::json;

constexpr uid_t k_nobody = 65534;

/// What the escaped command does with the host's view: steal the webhook secret, plant a
/// post-checkout hook in the daemon's mirror, leave a file in the daemon's folder.
constexpr const char* k_payload =
    "cat \"$SECRET\" > \"$OUTSIDE/stolen-$WHO\"; mkdir -p \"$MIRROR/hooks\";"
    " printf '#!/bin/sh\\ntouch %s\\n' \"$HOOK_MARK\" > \"$MIRROR/hooks/post-checkout\";"
    " chmod +x \"$MIRROR/hooks/post-checkout\"; echo ESCAPED";

/// The test command. Every line it prints that matters starts with "attack".
constexpr const char* k_attack = R"SH(#!/bin/sh
for sock in "$LAUNCHER_SOCKET" "$ATTACK_SOCKET"; do
  if [ ! -S "$sock" ]; then echo "attack: $sock is not there"; continue; fi
  echo "attack: $sock is reachable"
  WHO=a "$CRCRD" --sandbox-connect "$sock" -- bwrap --bind / / --dev /dev --proc /proc -- /bin/sh -c "$PAYLOAD" 2>&1 |
    sed 's/^/attack(a): /'
  WHO=b /usr/bin/python3 "$CLIENT_PY" "$sock" bwrap --bind / / --dev /dev --proc /proc -- /bin/sh -c "$PAYLOAD" 2>&1 |
    sed 's/^/attack(b): /'
done
if [ -e "$MIRROR/HEAD" ]; then
  echo "attack(c): the mirror is visible"
  printf '#!/bin/sh\ntouch %s\n' "$HOOK_MARK" > "$MIRROR/hooks/post-checkout" && echo "attack(c): WROTE a hook into the mirror"
else
  echo "attack(c): the mirror is out of reach"
fi
# The same class of hole, elsewhere: the host's shared memory, the system bus's socket, and
# links in the job's folder that the daemon's clean-up could follow.
if [ -e "$SHM_MARK" ]; then echo "attack(shm): SEES the host's /dev/shm"; else echo "attack(shm): a /dev/shm of its own"; fi
if [ -n "$(ls -A /run/dbus 2>/dev/null)" ]; then echo "attack(dbus): SEES $(ls -A /run/dbus)"; else echo "attack(dbus): nothing"; fi
ln -s "$OUTSIDE/precious" "$HOME/precious-link"; ln -s "$OUTSIDE" "$HOME/outside-link"; mkdir -p "$HOME/d" && ln -s "$OUTSIDE" "$HOME/d/up"
echo '<testsuite><testcase classname="c" name="t1"/></testsuite>' > "$CRCR_JUNIT_DIR/r.xml"
echo "attack: done"
)SH";

/// A minimal client of the launcher's wire protocol (sandbox_launcher.hpp), written from the
/// protocol alone: the request with the caller's own descriptors, and with a pid descriptor of
/// itself for the version that asks for one. It tries each version the launcher might speak.
constexpr const char* k_client_py = R"PY(import os, socket, sys
path, argv = sys.argv[1], sys.argv[2:]
def request(version, fds):
    env = [k + "=" + v for k, v in os.environ.items()]
    fields = [version, str(len(argv)), *argv, str(len(env)), *env, os.getcwd()]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    socket.send_fds(s, [b"".join(f.encode() + b"\0" for f in fields)], fds)
    while True:
        reply = s.recv(4096).decode()
        print("launcher said:", reply or "(nothing)", flush=True)
        if not reply or reply.startswith(("exit ", "error ")):
            return reply
for version, fds in (("crcrd-sandbox/2", [0, 1, 2, os.pidfd_open(os.getpid())]), ("crcrd-sandbox/1", [0, 1, 2])):
    if not request(version, fds).startswith("error"):
        break
)PY";

constexpr const char* k_rules =
    "tiers:\n"
    "  - {name: only, always: true, tests: [t1]}\n"
    "rules: []\n"
    "unmatched: nothing\n";

void chown_tree(const std::filesystem::path& root, uid_t uid) {
    ASSERT_EQ(::lchown(root.c_str(), uid, uid), 0) << root;
    if (!std::filesystem::is_directory(root)) return;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        ASSERT_EQ(::lchown(e.path().c_str(), uid, uid), 0) << e.path();
    }
}

std::vector<std::string> as_nobody() {
    return {"setpriv", "--reuid=" + std::to_string(k_nobody), "--regid=" + std::to_string(k_nobody),
            "--clear-groups", "--"};
}

/// Why this host cannot run the packaged set-up's shape ("" when it can).
std::string unavailable() {
    if (::geteuid() != 0) return "the test starts crcrd as another user, which needs root";
    if (auto why = bwrap_unavailable(); !why.empty()) return why;
    std::string out;
    auto argv = as_nobody();
    argv.insert(argv.end(), {"bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                             "--proc", "/proc", "true"});
    if (run_command(argv, &out) != 0)
        return "an unprivileged user cannot make bubblewrap's namespaces here: " + out;
    return "";
}

class LauncherEscapeTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (auto why = unavailable(); !why.empty()) GTEST_SKIP() << why;
        std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
        std::filesystem::permissions(bin.path(), std::filesystem::perms(0755));
        // The upstream repository the mirror fetches from, readable by the daemon's user.
        run_test_git({"init", "--quiet", "-b", "main", upstream().string()});
        write_file(upstream() / "setup.py", "print(1)\n");
        run_test_git({"-C", upstream().string(), "add", "-A"});
        run_test_git({"-C", upstream().string(), "commit", "--quiet", "-m", "initial"});
        m_sha = trim(run_test_git({"-C", upstream().string(), "rev-parse", "HEAD"}));

        write_file(bin.path() / "test.sh", k_attack, 0755);
        write_file(bin.path() / "client.py", k_client_py, 0644);
        write_file(dir.path() / "selection.yaml", k_rules);
        daemon = std::make_unique<TestDaemon>(dir.path(), config(), false);
        chown_tree(dir.path(), k_nobody);
        // The socket's folder, like /run/crcrd: the daemon's user's, apart from its other folders.
        chown_tree(run.path(), k_nobody);

        auto launcher = as_nobody();
        launcher.insert(launcher.end(),
                        {"systemd-socket-activate", "--seqpacket", "--accept", "-l",
                         socket().string(), CRCRD_BIN, "--sandbox-serve", "/usr/bin/bwrap"});
        m_launcher = std::make_unique<Process>(launcher, bin.path() / "launcher.log");
        ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket()); }))
            << launcher_log();
        // A second path to the same socket, in a folder every job's sandbox shows.
        ASSERT_EQ(::link(socket().c_str(), (bin.path() / "launcher.sock").c_str()), 0)
            << std::strerror(errno);

        write_file(shm_mark(), "the host's\n");
        write_file(dir.path() / "precious", "the daemon's\n");
        chown_tree(dir.path() / "precious", k_nobody);
        daemon->set_launch_prefix(as_nobody());
        daemon->start();
    }
    void TearDown() override { std::filesystem::remove(shm_mark()); }

    std::filesystem::path upstream() const { return dir.path() / "upstream"; }
    std::filesystem::path socket() const { return run.path() / "sandbox.sock"; }
    std::filesystem::path mirror() const { return dir.path() / "state" / "pytorch.git"; }
    std::filesystem::path hook_mark() const { return dir.path() / "a-hook-ran"; }
    std::filesystem::path shm_mark() const {
        return "/dev/shm/crcrd-test-" + dir.path().filename().string();
    }
    std::string launcher_log() const { return read_file(bin.path() / "launcher.log").value_or(""); }

    std::string config() const {
        const auto p = [](const std::filesystem::path& x) { return "\"" + x.string() + "\""; };
        return "selection: {rules: selection.yaml}\n"
               "upstream: {mirror: state/pytorch.git, remote: " +
               upstream().string() +
               "}\n"
               "runners:\n"
               "  - {name: sim-0, labels: [sim], health_check: [/bin/true]}\n"
               "execution:\n"
               "  command: [" +
               (bin.path() / "test.sh").string() +
               "]\n"
               "  work_root: state/work\n"
               "  min_free_bytes: 1MiB\n"
               "  infra_retries: 0\n"
               "  flaky_reruns: 0\n"
               "  sandbox_socket: " +
               socket().string() +
               "\n"
               "  env:\n"
               "    LAUNCHER_SOCKET: " +
               p(socket()) +
               "\n"
               "    ATTACK_SOCKET: " +
               p(bin.path() / "launcher.sock") +
               "\n"
               "    CRCRD: " +
               p(CRCRD_BIN) +
               "\n"
               "    CLIENT_PY: " +
               p(bin.path() / "client.py") +
               "\n"
               "    SECRET: " +
               p(dir.path() / "secrets" / "webhook.secret") +
               "\n"
               "    MIRROR: " +
               p(mirror()) +
               "\n"
               "    OUTSIDE: " +
               p(dir.path()) +
               "\n"
               "    HOOK_MARK: " +
               p(hook_mark()) +
               "\n"
               "    SHM_MARK: " +
               p(shm_mark()) +
               "\n"
               "    PAYLOAD: " +
               json(k_payload).dump() + "\n";
    }

    std::int64_t post(const std::string& id) {
        json j = json::parse(fixture_text("crcr/direct-pytorch-crcr.json"));
        j["client_payload"]["upstream_sha"] = m_sha;
        j["client_payload"]["pr_number"] = next_pr++;
        auto r = daemon->post_standard(j.dump(), id);
        EXPECT_EQ(r->status, 202) << r->body;
        return json::parse(r->body)["run_id"].get<std::int64_t>();
    }
    std::string job_log(std::int64_t run) {
        auto path = last_job(*daemon, {.run = run}).log_path;
        return read_file(path, 64u << 20).value_or("");
    }
    /// Hooks in the mirror other than the samples `git init` writes.
    std::vector<std::string> planted_hooks() const {
        std::vector<std::string> out;
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(mirror() / "hooks", ec)) {
            if (e.path().extension() != ".sample") out.push_back(e.path().filename().string());
        }
        return out;
    }
    std::vector<std::string> stolen() const {
        std::vector<std::string> out;
        for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
            if (e.path().filename().string().rfind("stolen-", 0) == 0)
                out.push_back(e.path().string());
        }
        return out;
    }

    TempDir dir;
    // The socket's folder like /run/crcrd, outside /tmp (which every sandbox replaces); the
    // command's folder on the same file system, for the hard link.
    TempDir run{"/run"};
    TempDir bin{"/run"};
    std::unique_ptr<TestDaemon> daemon;
    std::unique_ptr<Process> m_launcher;
    std::string m_sha;
    int next_pr = 700;
};

TEST_F(LauncherEscapeTest, AJobCannotHaveTheLauncherStartAnythingForIt) {
    const auto run = post("escape-1");
    EXPECT_EQ(daemon->finished(run), "completed/passed");
    const auto log = job_log(run);
    ASSERT_NE(log.find("attack: done"), std::string::npos) << log;
    // The configured socket's folder is hidden; the second path reaches the socket, and the
    // launcher refuses both clients there.
    EXPECT_NE(log.find("attack: " + socket().string() + " is not there"), std::string::npos) << log;
    EXPECT_NE(log.find("attack: " + (bin.path() / "launcher.sock").string() + " is reachable"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("attack(a): crcrd --sandbox-connect: the sandbox launcher refused: "),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("attack(b): launcher said: error "), std::string::npos) << log;
    EXPECT_EQ(log.find("ESCAPED"), std::string::npos) << log;
    EXPECT_NE(log.find("attack(c): the mirror is out of reach"), std::string::npos) << log;
    // Nothing was read or written outside the job's folder.
    EXPECT_EQ(stolen(), std::vector<std::string>{}) << log;
    EXPECT_EQ(planted_hooks(), std::vector<std::string>{}) << log;
    EXPECT_NE(launcher_log().find("refused: "), std::string::npos) << launcher_log();
    EXPECT_NE(log.find("attack(shm): a /dev/shm of its own"), std::string::npos) << log;
    EXPECT_NE(log.find("attack(dbus): nothing"), std::string::npos) << log;
    // The job's folder, with its links, is gone; what they pointed at is not.
    EXPECT_EQ(read_file(dir.path() / "precious").value_or(""), "the daemon's\n");
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "secrets" / "webhook.secret"));

    // The next job's checkout runs no hook.
    const auto next = post("escape-2");
    EXPECT_EQ(daemon->finished(next), "completed/passed");
    EXPECT_FALSE(std::filesystem::exists(hook_mark())) << job_log(next);
}

TEST_F(LauncherEscapeTest, AHookInTheMirrorNeverRunsInTheDaemonsCheckouts) {
    // However a hook got into the mirror, the daemon's git commands do not run it.
    const auto first = post("hook-1");
    EXPECT_EQ(daemon->finished(first), "completed/passed");
    write_file(mirror() / "hooks" / "post-checkout",
               "#!/bin/sh\ntouch " + hook_mark().string() + "\n", 0755);
    chown_tree(mirror() / "hooks", k_nobody);
    const auto second = post("hook-2");
    EXPECT_EQ(daemon->finished(second), "completed/passed");
    EXPECT_FALSE(std::filesystem::exists(hook_mark())) << job_log(second);
}

}  // namespace
}  // namespace crcrd
