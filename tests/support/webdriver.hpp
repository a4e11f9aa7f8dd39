#pragma once
// A real headless Chromium driven through Debian's chromedriver over the W3C WebDriver
// protocol (JSON over loopback HTTP), for the dashboard's browser tests. JavaScript is turned
// off in the browser: the pages must work without it.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace crcrd {

class Browser {
  public:
    /// Starts chromedriver on an ephemeral port and opens one Chromium session (headless,
    /// JavaScript off, self-signed certificates accepted, a profile in a temporary folder).
    /// Throws std::runtime_error with chromedriver's log when either fails.
    Browser();
    /// Ends the session and stops chromedriver.
    ~Browser();
    Browser(const Browser&) = delete;
    Browser& operator=(const Browser&) = delete;

    /// Loads `url` and waits for the page (and any redirects) to finish loading.
    void go(const std::string& url);
    /// The current URL, the page's title, its HTML as the browser parsed it, its visible text.
    std::string url();
    std::string title();
    std::string source();
    std::string text(const std::string& css = "body");
    /// The element reference of the first match of a CSS selector (throws if none), or of all.
    std::string find(const std::string& css);
    std::vector<std::string> find_all(const std::string& css);
    /// An XPath match, for what CSS cannot say (an option by its text).
    std::string find_xpath(const std::string& xpath);
    /// Types into an input, clicks (a link, a button, an option), reads an attribute.
    void type(const std::string& element, const std::string& text);
    void click(const std::string& element);
    /// Clicks what leads to another page (a link, a form's button) and waits until the
    /// browser's URL contains `url_part` (throws after 30 s): a click may return before the
    /// navigation it started has finished.
    void click_to(const std::string& element, const std::string& url_part);
    std::string attribute(const std::string& element, const std::string& name);
    /// The browser's cookies for the current page, as WebDriver reports them.
    nlohmann::json cookies();
    /// Saves a PNG of the viewport to `path` (the test's artifacts).
    void screenshot(const std::filesystem::path& path);

  private:
    nlohmann::json call(const std::string& method, const std::string& path,
                        const nlohmann::json& body = nullptr);

    TempDir m_dir;
    std::unique_ptr<Process> m_driver;
    std::string m_base;     // http://127.0.0.1:<port>
    std::string m_session;  // /session/<id>
};

/// Where a test saves what a person may want to look at afterwards (screenshots):
/// <build>/test-artifacts/<suite>/, made when missing.
std::filesystem::path test_artifacts_dir(const std::string& suite);

}  // namespace crcrd
