/* stats_drv [cpu|mpi] [SKEW_MS]: one rank of a job summing --sync-bn's
 * statistics between gradient buckets (tests/sync_stats_rank.h), its place
 * in the job from the launcher's environment (torchrun's variables, or
 * mpirun's); the ranks of tests/cli/50b-sync-bn-nodes.sh on the hosts of
 * network namespaces. Prints "rank R of W: N sums" when every sum and
 * step checked out, else one error line on stderr and exit 1. */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* atoi */
#include <string.h> /* strcmp */

#include "comm/launch.h" /* mgpu_launch_env */
#include "../sync_stats_rank.h" /* sr_run */

int main(int argc, char **argv)
{
	struct sr_job j = { .kind = MGPU_SYNC_CPU, .steps = 4 };

	if (argc > 1 && strcmp(argv[1], "mpi") == 0)
		j.kind = MGPU_SYNC_MPI;
	else if (argc > 1 && strcmp(argv[1], "cpu") != 0)
		return 2;
	if (argc > 2)
		j.skew_ms = atoi(argv[2]);
	if (mgpu_launch_env(&j.env) < 0 || sr_run(&j) < 0) {
		fprintf(stderr, "stats_drv: rank %d: error: %s\n", j.env.rank, mgpu_errmsg());
		return 1;
	}
	printf("rank %d of %d: %ld sums\n", j.env.rank, j.env.world, j.sums);
	return 0;
}
