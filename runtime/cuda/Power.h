// Power.h — the GPU's power draw, energy counter and SM clock, read through NVML (opened at
// run time, as Context.cu's process-memory report does: nothing links libnvidia-ml).
//
// For `tgc calibrate` (tools/calibrate/Calibrate.cpp): a training step on an H200 runs at the
// board's power limit, and the SM clock the limit leaves sets the speed of every
// compute-bound call (docs/cost-model.md "The power cap"). The calibration records the clock
// at each point and the power of a few kernels run for long enough that the limit acts.
#ifndef TGRT_CUDA_POWER_H
#define TGRT_CUDA_POWER_H

#include <string>

namespace tgrt_cuda {

/// One NVML reading of CUDA device `device` (the cudaSetDevice index).
struct PowerSample {
  double energyJ = 0;  ///< the board's energy counter since the driver loaded, joules
                       ///< (nvmlDeviceGetTotalEnergyConsumption, mJ resolution)
  double smMhz = 0;    ///< SM clock now, MHz (nvmlDeviceGetClockInfo, NVML_CLOCK_SM)
  double maxSmMhz = 0; ///< the SM clock's maximum, MHz (nvmlDeviceGetMaxClockInfo)
  double limitW = 0;   ///< the enforced power limit, W (nvmlDeviceGetEnforcedPowerLimit)
  double powerW = 0;   ///< power draw as NVML reports it, W (nvmlDeviceGetPowerUsage;
                       ///< averaged by the driver over its own window, ~1 s on Hopper)
};

/// Reads `s` for CUDA device `device`. False, with `why`, when NVML or one of its entry
/// points is missing, the device is not found by PCI bus id, or a call fails (then `s` is
/// unchanged); the CPU emulator (TGRT_CUDA_EMULATE) always says why not. NVML stays
/// initialised after the first call (no init per reading; a reading still takes
/// milliseconds of host time on an H200: read it around long work, not per step).
bool powerSample(int device, PowerSample& s, std::string& why);

} // namespace tgrt_cuda

#endif // TGRT_CUDA_POWER_H
