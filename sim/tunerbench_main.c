/* autoccl-tunerbench: the tuner benchmark without the simulator. */
#include "sim/bench.h"

int main(int argc, char **argv) { return acl_sim_bench_main(argc, argv); }
