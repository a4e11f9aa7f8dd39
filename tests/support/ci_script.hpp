#pragma once
// A backend CI script in miniature, for tests that run the real daemon: each line of
// CRCR_TESTS_FILE names what to do (ok_*, fail_*, flaky_* failing on the first attempt only,
// device_* printing a device-failure signature, crash, hang, stall, noisy, present_<file> failing
// when the pinned checkout has <file>, failon_<prefix> failing on a SHA that starts so), and JUnit
// is written into CRCR_JUNIT_DIR. A rerun runs only the tests of CRCR_RERUN_FILE. A first attempt
// given a CRCR_RERUN_FILE (a bisect run) waits while the file named by $CI_HOLD exists.

#include <filesystem>
#include <string>

namespace crcrd {

/// Why bubblewrap cannot create the sandbox's namespaces on this machine ("" when it can);
/// the tests that run jobs in the sandbox skip with it.
std::string bwrap_unavailable();

/// Writes k_ci_script as `bin`/ci.sh, executable, in a folder the sandbox's user can reach
/// (a backend's script lives outside the daemon's folders); its path.
std::filesystem::path install_ci_script(const std::filesystem::path& bin);

inline constexpr const char* k_ci_script = R"SH(#!/bin/sh
out="$CRCR_JUNIT_DIR/results.xml"
tests="$CRCR_TESTS_FILE"
# The rerun of a failed tier runs only what failed (JUnit ids ci::<test>), as a backend may.
if [ -n "${CRCR_RERUN_FILE:-}" ]; then
  echo "rerun of: $(tr '\n' ' ' < "$CRCR_RERUN_FILE")"
  sed 's/^ci:://' "$CRCR_RERUN_FILE" > rerun-tests.txt
  tests=rerun-tests.txt
fi
# A test holds a bisect run here to act while it runs (CI_HOLD, set in execution.env).
if [ -n "${CRCR_RERUN_FILE:-}" ] && [ "$CRCR_ATTEMPT" = 1 ]; then
  while [ -n "${CI_HOLD:-}" ] && [ -e "$CI_HOLD" ]; do sleep 0.05; done
fi
echo '<testsuite name="ci">' > "$out.part"
status=0
while IFS= read -r t; do
  case "$t" in
    ok_*) echo "<testcase classname=\"ci\" name=\"$t\" time=\"0.01\"/>" >> "$out.part" ;;
    fail_*) echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"boom\">assert</failure></testcase>" >> "$out.part"; status=1 ;;
    flaky_*) if [ "$CRCR_ATTEMPT" = 1 ]; then
               echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"first try\">assert</failure></testcase>" >> "$out.part"; status=1
             else echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part"; fi ;;
    failon_*) case "$CRCR_PYTORCH_SHA" in
                "${t#failon_}"*) echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"fails on $CRCR_PYTORCH_SHA\">assert</failure></testcase>" >> "$out.part"; status=1 ;;
                *) echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part" ;;
              esac ;;
    present_*) if [ -e "$CRCR_PYTORCH_DIR/${t#present_}" ]; then
                 echo "<testcase classname=\"ci\" name=\"$t\"><failure message=\"${t#present_} is there\">assert</failure></testcase>" >> "$out.part"; status=1
               else echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part"; fi ;;
    device_*) echo "RAS::VFIO::DeviceOpenFail: cannot open /dev/vfio/0"; exit 1 ;;
    crash) echo "the runner crashed"; exit 3 ;;
    hang) echo hanging; exec sleep 3601.5 ;;
    stall) echo stalling; exec sleep 3602.5 ;;
    noisy)
      # 50 MB without a newline, then what the sandbox lets it see.
      head -c 50000000 /dev/zero | tr '\0' x; echo
      for f in "$PROBE_SECRET" "$PROBE_CONFIG" "$PROBE_DB"; do
        [ -r "$f" ] && [ -s "$f" ] && echo "probe: READ $f"; head -c 100 "$f" 2>/dev/null
      done
      grep -l DAEMON_ONLY_MARKER /proc/[0-9]*/environ 2>/dev/null | sed 's/^/probe: daemon env in /'
      env | grep DAEMON_ONLY_MARKER | sed 's/^/probe: inherited /'
      echo "probe: done"
      echo "<testcase classname=\"ci\" name=\"$t\"/>" >> "$out.part" ;;
  esac
done < "$tests"
echo '</testsuite>' >> "$out.part"
mv "$out.part" "$out"
echo "slot=$CRCR_SLOT device=$SIM_DEVICE tier=$CRCR_TIER"
exit $status
)SH";

}  // namespace crcrd
