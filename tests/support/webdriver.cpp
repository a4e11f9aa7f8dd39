#include "support/webdriver.hpp"

#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

#include "crcrd/core/crypto.hpp"
#include "crcrd/core/files.hpp"
#include "crcrd/http/client.hpp"

namespace crcrd {

using nlohmann::json;

namespace {
constexpr const char* k_element = "element-6066-11e4-a52e-4f735466cecf";
}

Browser::Browser() {
    const auto log = m_dir.path() / "chromedriver.log";
    m_driver = std::make_unique<Process>(std::vector<std::string>{"chromedriver", "--port=0"}, log);
    // chromedriver prints the port it bound once it listens.
    std::string port;
    eventually(
        [&] {
            auto text = read_file(log);
            std::smatch m;
            static const std::regex k_port(R"(started successfully on port ([0-9]+))");
            if (text && std::regex_search(*text, m, k_port)) port = m[1].str();
            return !port.empty() || !m_driver->running();
        },
        std::chrono::seconds(20));
    if (port.empty())
        throw std::runtime_error("chromedriver did not start: " + read_file(log).value_or(""));
    m_base = "http://127.0.0.1:" + port;
    json caps = {
        {"browserName", "chrome"},
        {"acceptInsecureCerts", true},
        {"pageLoadStrategy", "normal"},
        {"goog:chromeOptions",
         {{"binary", "/usr/bin/chromium"},
          {"args",
           {"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,1400", "--user-data-dir=" + (m_dir.path() / "profile").string()}},
          // The dashboard must work without JavaScript: the browser runs none.
          {"prefs", {{"profile.managed_default_content_settings.javascript", 2}}}}}};
    json created = call("POST", "/session", {{"capabilities", {{"alwaysMatch", caps}}}});
    m_session = "/session/" + created.at("sessionId").get<std::string>();
}

Browser::~Browser() {
    try {
        if (!m_session.empty()) call("DELETE", m_session);
    } catch (const std::exception&) {
        // The driver is killed next; the browser goes with it.
    }
}

json Browser::call(const std::string& method, const std::string& path, const json& body) {
    http::ClientOptions o;
    o.timeout = std::chrono::seconds(60);
    auto r = http::send(method, m_base + path, {{"Content-Type", "application/json"}},
                        body.is_null() ? "" : body.dump(), o);
    if (!r) throw std::runtime_error("webdriver " + method + " " + path + ": " + r.error().message);
    json j = json::parse(r->body, nullptr, false);
    if (r->status != 200 || j.is_discarded()) {
        throw std::runtime_error("webdriver " + method + " " + path + " answered " +
                                 std::to_string(r->status) + ": " + r->body.substr(0, 2000));
    }
    return j.contains("value") && j.size() == 1 ? j["value"] : j;
}

void Browser::go(const std::string& url) {
    call("POST", m_session + "/url", {{"url", url}});
}
std::string Browser::url() {
    return call("GET", m_session + "/url").get<std::string>();
}
std::string Browser::title() {
    return call("GET", m_session + "/title").get<std::string>();
}
std::string Browser::source() {
    return call("GET", m_session + "/source").get<std::string>();
}

std::string Browser::text(const std::string& css) {
    return call("GET", m_session + "/element/" + find(css) + "/text").get<std::string>();
}

std::string Browser::find(const std::string& css) {
    return call("POST", m_session + "/element", {{"using", "css selector"}, {"value", css}})
        .at(k_element)
        .get<std::string>();
}

std::vector<std::string> Browser::find_all(const std::string& css) {
    std::vector<std::string> out;
    for (const auto& e :
         call("POST", m_session + "/elements", {{"using", "css selector"}, {"value", css}})) {
        out.push_back(e.at(k_element).get<std::string>());
    }
    return out;
}

std::string Browser::find_xpath(const std::string& xpath) {
    return call("POST", m_session + "/element", {{"using", "xpath"}, {"value", xpath}})
        .at(k_element)
        .get<std::string>();
}

void Browser::type(const std::string& element, const std::string& text) {
    call("POST", m_session + "/element/" + element + "/value", {{"text", text}});
}

void Browser::click(const std::string& element) {
    call("POST", m_session + "/element/" + element + "/click", json::object());
}

void Browser::click_to(const std::string& element, const std::string& url_part) {
    click(element);
    std::string now;
    if (!eventually([&] { return (now = url()).find(url_part) != std::string::npos; },
                    std::chrono::seconds(30))) {
        throw std::runtime_error("webdriver: after the click the page is " + now +
                                 ", not one with " + url_part);
    }
}

std::string Browser::attribute(const std::string& element, const std::string& name) {
    json v = call("GET", m_session + "/element/" + element + "/attribute/" + name);
    return v.is_string() ? v.get<std::string>() : std::string();
}

json Browser::cookies() {
    return call("GET", m_session + "/cookie");
}

void Browser::screenshot(const std::filesystem::path& path) {
    auto png = crypto::base64_decode(call("GET", m_session + "/screenshot").get<std::string>());
    if (!png) throw std::runtime_error("webdriver: a screenshot that is not base64");
    std::ofstream(path, std::ios::binary) << *png;
}

std::filesystem::path test_artifacts_dir(const std::string& suite) {
    auto dir = std::filesystem::path(CRCRD_BINARY_DIR) / "test-artifacts" / suite;
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace crcrd
