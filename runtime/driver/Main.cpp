// Main.cpp — main() of a compiled training executable: hands the four symbols emitted by
// tgc (tg_model_info, tg_micro_step, tg_optimizer_step, tg_eval_step; see runtime/tgrt.h) to
// the driver. Built as the object library `tgrt_main`, linked only into executables.
#include "runtime/driver/Driver.h"

int main(int argc, char** argv) {
  tgrt_driver_hooks hooks;
  hooks.model_info = &tg_model_info;
  hooks.micro_step = &tg_micro_step;
  hooks.optimizer_step = &tg_optimizer_step;
  hooks.eval_step = &tg_eval_step;
  return tgrt_driver_main(argc, argv, hooks);
}
