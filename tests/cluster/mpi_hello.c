/* tests/cluster/mpi_hello.c: the smallest real MPI job for the emulated
 * cluster smoke test. Every rank adds its rank with MPI_Allreduce; rank 0
 * prints "size N sum S" and each rank prints the node it ran on. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank = 0, size = 0;
	long mine, sum = 0;
	const char *node = getenv("SLURMD_NODENAME");

	if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
		fprintf(stderr, "mpi_hello: MPI_Init failed\n");
		return 1;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	mine = rank;
	if (MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
		fprintf(stderr, "mpi_hello: MPI_Allreduce failed on rank %d\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	printf("rank %d of %d on %s\n", rank, size, node ? node : "?");
	if (rank == 0)
		printf("size %d sum %ld\n", size, sum);
	MPI_Finalize();
	return 0;
}
