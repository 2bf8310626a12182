//! "Calls from several threads must not corrupt anything": a serial program whose threads
//! open, write, read and close their own files concurrently (and share one stdio stream)
//! under the preload. The trace must be readable and complete, and its call and byte counts
//! must be exactly what the threads did, whatever the interleaving.

use crate::common;
use common::*;
use rsd::TraceFile;

const THREADS: usize = 8;
const WRITES: usize = 2000;
const SIZE: usize = 256;

#[test]
fn concurrent_threads_are_all_recorded() {
    let dir = scratch();
    let src = dir.path().join("threads.c");
    std::fs::write(
        &src,
        format!(
            r#"#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#define THREADS {THREADS}
#define WRITES {WRITES}
#define SIZE {SIZE}
static const char *dir;
static FILE *shared;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *arg) {{
    long t = (long)arg;
    char path[4096], buf[SIZE];
    memset(buf, 'a' + (int)t, sizeof buf);
    snprintf(path, sizeof path, "%s/t%ld", dir, t);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    for (int i = 0; i < WRITES; i++) {{
        if (i % 2) write(fd, buf, SIZE);
        else pwrite(fd, buf, SIZE, (off_t)i * SIZE);
    }}
    for (int i = 0; i < WRITES / 10; i++) pread(fd, buf, SIZE, (off_t)i * SIZE);
    close(fd);
    pthread_mutex_lock(&mu);
    fprintf(shared, "thread %ld done\n", t);
    pthread_mutex_unlock(&mu);
    return NULL;
}}
int main(int argc, char **argv) {{
    dir = argv[1];
    char path[4096];
    snprintf(path, sizeof path, "%s/shared.log", dir);
    shared = fopen(path, "w");
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    fclose(shared);
    return 0;
}}
"#
        ),
    )
    .unwrap();
    let bin = dir.path().join("threads");
    let st = std::process::Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc");
    assert!(st.success());
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let trace = dir.path().join("threads.iotrex");
    let out = std::process::Command::new("timeout")
        .arg("60")
        .arg("env")
        .arg(format!("LD_PRELOAD={}", tracer_lib().display()))
        .arg(&bin)
        .arg(&data)
        .env("IOTREX_OUT", &trace)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .output()
        .expect("run threaded program");
    assert!(out.status.success(), "{out:?}");
    let tf = TraceFile::read(&trace).expect("threaded trace");
    assert!(!tf.header.incomplete, "{:?}", tf.header.notes);
    let c = trace_counts(&tf);
    let (t, w, s) = (THREADS as u64, WRITES as u64, SIZE as u64);
    assert_eq!(c["open"], (t, 0));
    assert_eq!(c["close"], (t, 0));
    assert_eq!(c["write"], (t * w / 2, t * w / 2 * s));
    assert_eq!(c["pwrite"], (t * w / 2, t * w / 2 * s));
    assert_eq!(c["pread"], (t * w / 10, t * w / 10 * s));
    assert_eq!(c["fopen"].0, 1);
    assert_eq!(c["fprintf"].0, t);
    assert_eq!(c["fclose"].0, 1);
    // The data really went where the threads wrote it.
    for i in 0..THREADS {
        let len = std::fs::metadata(data.join(format!("t{i}"))).unwrap().len();
        // The last pwrite (i = WRITES - 2) ends furthest: the writes only reach WRITES / 2.
        assert_eq!(len, ((WRITES - 1) * SIZE) as u64, "t{i}");
    }
    let log = std::fs::read_to_string(data.join("shared.log")).unwrap();
    assert_eq!(log.lines().count(), THREADS);
}
