/* darray_typemap: what the MPI library makes of MPI_Type_create_darray, for comparison with
 * iotrex's own type maps. Runs as one process (a darray names its size and rank, it needs no
 * communicator of that size). Reads one darray per line from the file FILE:
 *   OLD NDIMS FORTRAN SIZE G[NDIMS] DIST[NDIMS] DARG[NDIMS] P[NDIMS]
 * in iotrex's stored encoding (rsd::mpi::distribute: BLOCK 0, CYCLIC 1, NONE 2, default darg
 * -1; FORTRAN 0 or 1), OLD 0 for MPI_INT, 1 for MPI_Type_vector(2, 1, 2, MPI_INT) (two ints
 * of every three). For every rank of the grid it builds the type and prints
 *   T LINE RANK SIZE LB EXTENT TRUE_LB TRUE_EXTENT E0 E1 ...
 * where E0 E1 ... are the int indices of the global array the type selects, in type-map
 * order: MPI_Pack of one copy of the type over an array holding its own index at each int
 * lists exactly that.
 * Usage: darray_typemap FILE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXD 8

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    FILE *in = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (!in) {
        fprintf(stderr, "usage: darray_typemap FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Datatype vec;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int line = 0;
    int old, nd, fortran, size;
    while (fscanf(in, "%d %d %d %d", &old, &nd, &fortran, &size) == 4) {
        int g[MAXD], dist[MAXD], darg[MAXD], p[MAXD];
        if (nd < 1 || nd > MAXD) return 3;
        for (int k = 0; k < nd; k++) fscanf(in, "%d", &g[k]);
        for (int k = 0; k < nd; k++) {
            int v;
            fscanf(in, "%d", &v);
            dist[k] = v == 0 ? MPI_DISTRIBUTE_BLOCK
                      : v == 1 ? MPI_DISTRIBUTE_CYCLIC
                               : MPI_DISTRIBUTE_NONE;
        }
        for (int k = 0; k < nd; k++) {
            fscanf(in, "%d", &darg[k]);
            if (darg[k] == -1) darg[k] = MPI_DISTRIBUTE_DFLT_DARG;
        }
        for (int k = 0; k < nd; k++) fscanf(in, "%d", &p[k]);
        MPI_Datatype oldtype = old ? vec : MPI_INT;
        MPI_Aint olb, oext;
        MPI_Type_get_extent(oldtype, &olb, &oext);
        long total = oext / sizeof(int);
        for (int k = 0; k < nd; k++) total *= g[k];
        int *src = malloc(sizeof(int) * (total + 1));
        for (long i = 0; i < total; i++) src[i] = (int)i;
        for (int rank = 0; rank < size; rank++) {
            MPI_Datatype t;
            if (MPI_Type_create_darray(size, rank, nd, g, dist, darg, p,
                                       fortran ? MPI_ORDER_FORTRAN : MPI_ORDER_C, oldtype,
                                       &t) != MPI_SUCCESS)
                return 4;
            MPI_Type_commit(&t);
            int tsize, psize, pos = 0;
            MPI_Aint lb, ext, tlb, text;
            MPI_Type_size(t, &tsize);
            MPI_Type_get_extent(t, &lb, &ext);
            MPI_Type_get_true_extent(t, &tlb, &text);
            MPI_Pack_size(1, t, MPI_COMM_SELF, &psize);
            int *packed = malloc(psize + sizeof(int));
            MPI_Pack(src, 1, t, packed, psize, &pos, MPI_COMM_SELF);
            printf("T %d %d %d %ld %ld %ld %ld", line, rank, tsize, (long)lb, (long)ext, (long)tlb,
                   (long)text);
            for (int i = 0; i < tsize / (int)sizeof(int); i++) printf(" %d", packed[i]);
            printf("\n");
            free(packed);
            MPI_Type_free(&t);
        }
        free(src);
        line++;
    }
    fclose(in);
    fflush(stdout);
    MPI_Type_free(&vec);
    MPI_Finalize();
    return 0;
}
