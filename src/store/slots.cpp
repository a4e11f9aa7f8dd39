#include "crcrd/store/slots.hpp"

#include <algorithm>

#include "crcrd/store/sqlite.hpp"

namespace crcrd::store {

void SlotsRepo::sync(const std::vector<std::string>& configured) {
    {
        Scoped add(m_db, "INSERT INTO slots (name) VALUES (?) ON CONFLICT (name) DO NOTHING");
        for (const auto& name : configured) {
            add->reset();
            add->bind(1, name);
            add->run();
        }
    }
    std::vector<std::string> gone;
    {
        Scoped list(m_db, "SELECT name FROM slots WHERE state <> 'busy'");
        while (list->step()) {
            std::string n = list->text(0);
            if (std::find(configured.begin(), configured.end(), n) == configured.end())
                gone.push_back(n);
        }
    }
    Scoped del(m_db, "DELETE FROM slots WHERE name = ?");
    for (const auto& n : gone) {
        del->reset();
        del->bind(1, n);
        del->run();
    }
}

std::vector<std::string> SlotsRepo::free_undrained() {
    Scoped st(m_db, "SELECT name FROM slots WHERE state = 'idle' AND drained = 0 ORDER BY name");
    std::vector<std::string> names;
    while (st->step()) names.push_back(st->text(0));
    return names;
}

bool SlotsRepo::take(const std::string& name, std::int64_t job_id, SystemTime expires) {
    const std::string expires_at = rfc3339(expires);
    Scoped st(m_db,
              "UPDATE slots SET state = 'busy', job_id = ?, lease_expires_at = ? WHERE name = ? "
              "AND state = 'idle'");
    st->bind(1, job_id).bind(2, expires_at).bind(3, name);
    st->run();
    return m_db.changes() == 1;
}

void SlotsRepo::take_offline(const std::string& name, const JsonText& health,
                             SystemTime next_check) {
    const std::string next_check_at = rfc3339(next_check);
    Scoped st(m_db,
              "UPDATE slots SET state = 'offline', job_id = NULL, lease_expires_at = NULL, "
              "last_health = ?, "
              "next_health_at = ? WHERE name = ?");
    st->bind(1, health.text()).bind(2, next_check_at).bind(3, name);
    st->run();
}

void SlotsRepo::give_back(const std::string& name, std::int64_t job_id,
                          const std::optional<JsonText>& health) {
    Scoped st(m_db,
              "UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL, "
              "last_health = coalesce(?, last_health) WHERE name = ? AND job_id = ?");
    st->bind(1, health ? std::optional<std::string>(health->text()) : std::nullopt)
        .bind(2, name)
        .bind(3, job_id);
    st->run();
}

void SlotsRepo::free_all_busy() {
    m_db.exec(
        "UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL WHERE state = "
        "'busy'");
}

void SlotsRepo::renew_lease(std::int64_t job_id, SystemTime expires) {
    const std::string expires_at = rfc3339(expires);
    Scoped st(m_db, "UPDATE slots SET lease_expires_at = ? WHERE state = 'busy' AND job_id = ?");
    st->bind(1, expires_at).bind(2, job_id);
    st->run();
}

std::vector<LapsedLease> SlotsRepo::lapsed(SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(m_db, "SELECT name, job_id FROM slots WHERE state = 'busy' AND lease_expires_at < ?");
    st->bind(1, now);
    std::vector<LapsedLease> out;
    while (st->step()) out.push_back(LapsedLease{st->text(0), st->opt_int64(1)});
    return out;
}

void SlotsRepo::free_busy(const std::string& name) {
    Scoped st(m_db,
              "UPDATE slots SET state = 'idle', job_id = NULL, lease_expires_at = NULL WHERE name "
              "= ? AND state = 'busy'");
    st->bind(1, name);
    st->run();
}

std::vector<std::string> SlotsRepo::due_for_recheck(SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(m_db, "SELECT name FROM slots WHERE state = 'offline' AND next_health_at <= ?");
    st->bind(1, now);
    std::vector<std::string> out;
    while (st->step()) out.push_back(st->text(0));
    return out;
}

std::optional<std::string> SlotsRepo::next_recheck_at(SystemTime now_at) {
    const std::string now = rfc3339(now_at);
    Scoped st(
        m_db,
        "SELECT min(next_health_at) FROM slots WHERE state = 'offline' AND next_health_at > ?");
    st->bind(1, now);
    if (!st->step()) return std::nullopt;
    return st->opt_text(0);
}

void SlotsRepo::record_recheck(const std::string& name, bool ok, const JsonText& health,
                               SystemTime next_check) {
    const std::string next_check_at = rfc3339(next_check);
    Scoped st(m_db,
              "UPDATE slots SET state = CASE WHEN ? THEN 'idle' ELSE 'offline' END, last_health = "
              "?, next_health_at = ? "
              "WHERE name = ? AND state = 'offline'");
    st->bind(1, std::int64_t{ok}).bind(2, health.text()).bind(3, next_check_at).bind(4, name);
    st->run();
}

bool SlotsRepo::set_drained(const std::string& name, bool drained) {
    Scoped st(m_db, "UPDATE slots SET drained = ? WHERE name = ?");
    st->bind(1, std::int64_t{drained}).bind(2, name);
    st->run();
    return m_db.changes() > 0;
}

}  // namespace crcrd::store
