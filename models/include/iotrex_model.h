/* iotrex model plugin ABI, version 1.
 *
 * A plugin is a shared library exporting `iotrex_model_plugin`. iotrex reads `abi_version`
 * before anything else and refuses a plugin whose version differs from its own.
 * Coefficients are plain int64 values whose meaning is the plugin's own; iotrex checks every
 * fit the plugin claims against every observation before using it. Functions must not unwind
 * (no C++ exceptions, no Rust panics) across this boundary.
 */
#ifndef IOTREX_MODEL_H
#define IOTREX_MODEL_H
#include <stdint.h>

#define IOTREX_MODEL_ABI_VERSION 1
#define IOTREX_VARS_N 1      /* f(n): a quantity of the rank count */
#define IOTREX_VARS_N_RANK 2 /* f(n, rank): a per-rank parameter */

typedef struct iotrex_model_v1 {
    const char *name; /* NUL-terminated UTF-8 */
    uint32_t nparams; /* coefficient count, 1..=16 */
    uint32_t vars;    /* IOTREX_VARS_* */
    /* Fits npoints observations (n[i], rank[i]) -> y[i]; writes nparams coefficients and
     * returns 1 when the model reproduces every point exactly, 0 otherwise. */
    int32_t (*fit)(const int64_t *n, const int64_t *rank, const int64_t *y, uint64_t npoints,
                   int64_t *coeffs);
    /* Evaluates at (n, rank); returns 1 and writes *out, or 0 when undefined there. */
    int32_t (*eval)(const int64_t *coeffs, int64_t n, int64_t rank, int64_t *out);
} iotrex_model_v1;

typedef struct iotrex_plugin {
    uint32_t abi_version; /* IOTREX_MODEL_ABI_VERSION; must stay the first field */
    uint32_t nmodels;
    const iotrex_model_v1 *models;
} iotrex_plugin;

const iotrex_plugin *iotrex_model_plugin(void);
#endif
