#include "support/ci_script.hpp"

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

std::string bwrap_unavailable() {
    std::string out;
    if (run_command({"bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "true"},
                    &out) == 0)
        return {};
    return "bubblewrap cannot create namespaces here: " + out;
}

std::filesystem::path install_ci_script(const std::filesystem::path& bin) {
    write_file(bin / "ci.sh", k_ci_script, 0755);
    std::filesystem::permissions(bin, std::filesystem::perms(0755));
    return bin / "ci.sh";
}

}  // namespace crcrd
