#include "crcrd/exec/devices.hpp"

#include <sys/stat.h>

#include <filesystem>

#include "crcrd/core/files.hpp"

namespace crcrd::exec {

namespace {

struct Identity {
    bool chr = false;
    dev_t rdev = 0;  // a character or block device: the device number
    dev_t dev = 0;   // anything else: the file
    ino_t ino = 0;
    std::string path;
};

bool same(const struct stat& st, const Identity& id) {
    if (id.chr) return (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && st.st_rdev == id.rdev;
    return st.st_dev == id.dev && st.st_ino == id.ino;
}

}  // namespace

std::optional<DeviceHolder> device_holder(const std::vector<std::string>& devices) {
    std::vector<Identity> ids;
    for (const auto& d : devices) {
        struct stat st {};
        if (::stat(d.c_str(), &st) != 0) continue;
        Identity id;
        id.chr = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
        id.rdev = st.st_rdev;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.path = d;
        ids.push_back(id);
    }
    if (ids.empty()) return std::nullopt;
    std::error_code ec;
    for (std::filesystem::directory_iterator p("/proc", ec), end; !ec && p != end;
         p.increment(ec)) {
        const std::string pid = p->path().filename().string();
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
        std::error_code fec;
        for (std::filesystem::directory_iterator f(p->path() / "fd", fec), fend; !fec && f != fend;
             f.increment(fec)) {
            struct stat st {};
            if (::stat(f->path().c_str(), &st) != 0)
                continue;  // follows the descriptor to its file
            for (const auto& id : ids) {
                if (!same(st, id)) continue;
                auto comm = read_file(p->path() / "comm", 256);
                return DeviceHolder{static_cast<pid_t>(std::stol(pid)),
                                    comm ? trim(*comm) : std::string("?"), id.path};
            }
        }
    }
    return std::nullopt;
}

std::string describe(const DeviceHolder& h) {
    return "device " + h.device + " is held by pid " + std::to_string(h.pid) + " (" + h.command +
           ")";
}

}  // namespace crcrd::exec
