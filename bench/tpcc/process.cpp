// process_figures: a process's CPU time, device writes and resident memory
// from /proc (bench/common/proc.h reads the files), and its data's block
// device's sectors written.
#include "bench/tpcc/backend.h"
#include "bench/common/proc.h"

namespace aup::tpcc {

ProcessFigures process_figures(pid_t pid, const bench::BlockDevice& device) {
  ProcessFigures f;
  bench::ProcessCpu cpu = bench::process_cpu(pid);
  f.user_ns = cpu.user_ns;
  f.system_ns = cpu.system_ns;
  f.write_bytes = bench::proc_field(bench::proc_file(pid, "io"), "write_bytes:");
  f.resident_bytes = bench::proc_field(bench::proc_file(pid, "status"), "VmRSS:") * 1024;
  if (std::optional<double> b = device.bytes_written()) f.device_bytes = *b;
  return f;
}

}  // namespace aup::tpcc
