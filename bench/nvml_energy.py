"""The GPU's energy counter through NVML (ctypes, no pynvml): the reading tgc's trainer takes
for its "energy:" line (tgrt_power_sample: nvmlDeviceGetTotalEnergyConsumption, millijoules
since the driver loaded), so that a PyTorch harness reports its energy per step the same way.

    e = Energy()          # CUDA device 0's board, matched by PCI bus id when torch says it
    j0 = e.joules()       # None where NVML or the counter is missing
    ...                   # the timed steps, synchronised
    j1 = e.joules()

Reading it costs milliseconds of host time: read it around the timed loop, never per step.
"""
import ctypes


class Energy:
    def __init__(self, pci_bus_id=None, index=0):
        self.lib, self.dev = None, ctypes.c_void_p()
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return
        if lib.nvmlInit_v2() != 0:
            return
        if pci_bus_id:
            ok = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self.dev)) == 0
        else:
            ok = lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.dev)) == 0
        if ok:
            self.lib = lib

    def joules(self):
        """The board's energy counter in joules, or None."""
        if self.lib is None:
            return None
        mj = ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, ctypes.byref(mj)) != 0:
            return None
        return mj.value / 1e3


def for_torch_device(torch, device=0):
    """Energy() of torch's CUDA device `device` (by PCI bus id when torch exposes it)."""
    props = torch.cuda.get_device_properties(device)
    bus = getattr(props, "pci_bus_id", None)
    if isinstance(bus, int):
        bus = "%08x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), bus,
                                     getattr(props, "pci_device_id", 0))
    return Energy(pci_bus_id=bus if isinstance(bus, str) else None, index=device)
