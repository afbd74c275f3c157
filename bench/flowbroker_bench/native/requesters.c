/*
 * The seed 004 requesters in C: clients that each put a request and get its reply with wait, in
 * a loop, against the queue manager's own protocol — as seed 004's "multithreaded MQSeries Client
 * program written in C" drove its broker. One thread multiplexes every requester's connection
 * (epoll), so the driver's own CPU is small beside the processes it measures.
 *
 * It knows frames, not messages: flowbroker_bench.native writes a plan holding, per requester, the
 * HELLO frame, a get-wait frame and a ring of request blocks (a PUT frame followed by the GET
 * frame, the bytes the Python requester sends) with the offset of the put's msgId counter, which
 * is patched before every send so each request keeps a unique msgId.
 *
 * Usage: requesters PLAN_FILE
 * Stdout: "measuring" when the window opens, "stopped" when it closes, then one JSON line with
 * the counts, the driver's CPU over the window and the median times. Errors: one line on stderr
 * starting "requesters: ", exit status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "FBREQ1\n"
#define RID_PUT 1u
#define RID_GET 2u
#define RID_HELLO 4u
#define OP_REPLY_OK 0x80
#define OP_REPLY_ERR 0x81
#define MD_SIZE 116u
#define MD_BODY_LEN_AT 112u
#define MAX_FRAME (64u * 1024u * 1024u)
#define MAX_CONNS 4096u
#define MAX_RING 4096u
#define MAX_PART (16u * 1024u * 1024u)

typedef struct {
    unsigned char *bytes;
    uint32_t len;
    uint32_t id_at;    /* offset of the 12-byte counter part of the put's msgId */
    uint32_t body_len; /* the request body's length, for the bytes moved */
} Block;

typedef struct {
    int fd;
    unsigned char *hello;
    uint32_t hello_len;
    unsigned char *get;
    uint32_t get_len;
    Block *ring;
    uint32_t ring_len;
    uint32_t next; /* ring index of the next request */
    uint64_t seq;
    /* what is being written */
    const unsigned char *out;
    uint32_t out_len, out_done;
    /* what has been read */
    unsigned char *in;
    size_t in_cap, in_len;
    /* the request in flight */
    double started, put_done;
    uint32_t body_len;
    int put_answered;
    int done;
} Conn;

static void fail(const char *fmt, ...) {
    va_list ap;
    fputs("requesters: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* --- the plan file ------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    size_t left;
    size_t offset;
} Reader;

static const unsigned char *take(Reader *r, size_t n, const char *what) {
    if (n > r->left)
        fail("plan file truncated at byte %zu: %s needs %zu bytes, %zu left", r->offset, what, n, r->left);
    const unsigned char *at = r->p;
    r->p += n;
    r->left -= n;
    r->offset += n;
    return at;
}

static uint32_t take32(Reader *r, const char *what) { return le32(take(r, 4, what)); }

static double take_f64(Reader *r, const char *what) {
    double v;
    memcpy(&v, take(r, 8, what), 8);
    return v;
}

static unsigned char *take_part(Reader *r, uint32_t *len, const char *what) {
    uint32_t n = take32(r, what);
    if (n == 0 || n > MAX_PART) fail("plan file: %s of %u bytes at byte %zu (1..%u allowed)", what, n, r->offset, MAX_PART);
    unsigned char *copy = malloc(n);
    if (!copy) fail("out of memory for %s", what);
    memcpy(copy, take(r, n, what), n);
    *len = n;
    return copy;
}

/* --- connections --------------------------------------------------------------------------- */

static int open_socket(int unix_kind, const char *where, const char *port) {
    int fd;
    if (unix_kind) {
        struct sockaddr_un sa;
        if (strlen(where) >= sizeof sa.sun_path) fail("unix socket path too long: %s", where);
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        strcpy(sa.sun_path, where);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
            fail("cannot reach the queue manager at %s: %s", where, strerror(errno));
    } else {
        struct addrinfo hints, *res;
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_STREAM;
        int rc = getaddrinfo(where, port, &hints, &res);
        if (rc != 0) fail("cannot resolve %s: %s", where, gai_strerror(rc));
        fd = socket(res->ai_family, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0)
            fail("cannot reach the queue manager at %s:%s: %s", where, port, strerror(errno));
        freeaddrinfo(res);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    struct timeval tv = {10, 0}; /* the handshake's reads are bounded */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void write_all(int fd, const unsigned char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail("write to the queue manager failed: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

static void read_all(int fd, unsigned char *p, size_t n) {
    while (n) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) fail("the queue manager closed the connection during the handshake");
        if (got < 0) fail("no answer to HELLO from the queue manager: %s", strerror(errno));
        p += got;
        n -= (size_t)got;
    }
}

/* The payload's JSON arguments, for an error message (at most 300 bytes of them). */
static void describe_error(const unsigned char *frame, uint32_t length, char *out, size_t cap) {
    /* frame: <u32 length><u8 op><u32 rid><u32 jlen><json>... */
    out[0] = 0;
    if (length < 9) return;
    uint32_t jlen = le32(frame + 9);
    if (jlen > length - 9) return;
    size_t n = jlen < cap - 1 ? jlen : cap - 1;
    memcpy(out, frame + 13, n);
    out[n] = 0;
}

static void handshake(Conn *c) {
    write_all(c->fd, c->hello, c->hello_len);
    unsigned char head[9];
    read_all(c->fd, head, 9);
    uint32_t length = le32(head);
    if (length < 5 || length > 1u << 20) fail("HELLO answered with a frame of %u bytes", length);
    unsigned char *frame = malloc(length + 4);
    if (!frame) fail("out of memory");
    memcpy(frame, head, 9);
    read_all(c->fd, frame + 9, length - 5);
    if (frame[4] != OP_REPLY_OK || le32(frame + 5) != RID_HELLO) {
        char why[301];
        describe_error(frame, length, why, sizeof why);
        fail("the queue manager refused HELLO: %s", why[0] ? why : "no reason given");
    }
    free(frame);
    struct timeval none = {0, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
}

/* --- the measurement ---------------------------------------------------------------------- */

typedef struct {
    double *v;
    size_t n, cap;
} Samples;

static void add(Samples *s, double x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) fail("out of memory for samples");
    }
    s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(Samples *s) {
    if (!s->n) return -1;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    return s->n % 2 ? s->v[s->n / 2] : (s->v[s->n / 2 - 1] + s->v[s->n / 2]) / 2;
}

static int epfd;
static int measuring, stopping, sync_puts;
static uint64_t counted, moved, puts_total;
static Samples responses, put_times, get_times;
static uint32_t now_seconds;

static void want_write(Conn *c, int on) {
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void flush_out(Conn *c) {
    while (c->out_done < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_done, c->out_len - c->out_done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            want_write(c, 1);
            return;
        }
        if (w <= 0) fail("write to the queue manager failed: %s", strerror(errno));
        c->out_done += (uint32_t)w;
    }
}

static void send_bytes(Conn *c, const unsigned char *p, uint32_t n) {
    c->out = p;
    c->out_len = n;
    c->out_done = 0;
    flush_out(c);
}

static void send_request(Conn *c) {
    Block *b = &c->ring[c->next];
    c->next = (c->next + 1) % c->ring_len;
    c->seq++;
    unsigned char *id = b->bytes + b->id_at; /* seconds, then a counter, big-endian */
    for (int i = 0; i < 4; i++) id[i] = (unsigned char)(now_seconds >> (24 - 8 * i));
    for (int i = 0; i < 8; i++) id[4 + i] = (unsigned char)(c->seq >> (56 - 8 * i));
    c->body_len = b->body_len;
    c->put_answered = !sync_puts;
    c->started = now();
    send_bytes(c, b->bytes, b->len);
    if (!sync_puts) {
        c->put_done = now(); /* an asynchronous put's time is its sending's */
        puts_total++;
    }
}

static void on_frame(Conn *c, const unsigned char *frame, uint32_t length) {
    unsigned op = frame[4];
    uint32_t rid = le32(frame + 5);
    if (op == OP_REPLY_ERR) {
        char why[301];
        describe_error(frame, length, why, sizeof why);
        fail("the queue manager refused a %s: %s", rid == RID_PUT ? "put" : rid == RID_GET ? "get" : "request",
             why[0] ? why : "no reason given");
    }
    if (op != OP_REPLY_OK) fail("unexpected frame op %u from the queue manager", op);
    if (rid == RID_PUT) {
        c->put_done = now();
        c->put_answered = 1;
        puts_total++;
        return;
    }
    if (rid != RID_GET) fail("answer to an unknown request id %u", rid);
    if (length < 9) fail("get answered with a frame of %u bytes", length);
    uint32_t jlen = le32(frame + 9);
    if (jlen > length - 9) fail("get answer's argument length %u exceeds its frame", jlen);
    uint32_t tail_at = 13 + jlen, frame_end = length + 4;
    if (tail_at == frame_end) { /* the wait ended with no message: wait again, or stop */
        if (stopping) {
            c->done = 1;
            return;
        }
        send_bytes(c, c->get, c->get_len);
        return;
    }
    if (frame_end - tail_at < MD_SIZE) fail("get answer holds %u bytes, less than a descriptor", frame_end - tail_at);
    uint32_t reply_body = le32(frame + tail_at + MD_BODY_LEN_AT);
    if (!c->put_answered) fail("a reply came before its request's put was answered");
    if (measuring) {
        double done = now();
        counted += 2;
        moved += (uint64_t)c->body_len + reply_body;
        add(&put_times, c->put_done - c->started);
        add(&get_times, done - c->put_done);
        add(&responses, done - c->started);
    }
    if (stopping)
        c->done = 1;
    else
        send_request(c);
}

static void on_readable(Conn *c) {
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t cap = c->in_cap * 2;
            unsigned char *grown = realloc(c->in, cap);
            if (!grown) fail("out of memory for a reply");
            c->in = grown;
            c->in_cap = cap;
        }
        ssize_t got = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (got == 0) fail("the queue manager closed a requester's connection");
        if (got < 0) fail("read from the queue manager failed: %s", strerror(errno));
        c->in_len += (size_t)got;
    }
    size_t pos = 0;
    while (c->in_len - pos >= 9) {
        uint32_t length = le32(c->in + pos);
        if (length < 5 || length > MAX_FRAME) fail("frame of %u bytes from the queue manager", length);
        if (c->in_len - pos - 4 < length) break;
        on_frame(c, c->in + pos, length);
        pos += 4 + (size_t)length;
    }
    if (pos) {
        memmove(c->in, c->in + pos, c->in_len - pos);
        c->in_len -= pos;
    }
}

int main(int argc, char **argv) {
    if (argc != 2) fail("usage: requesters PLAN_FILE");
    FILE *f = fopen(argv[1], "rb");
    if (!f) fail("cannot open the plan %s: %s", argv[1], strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size <= 0 || size > (long)1 << 30) fail("plan file of %ld bytes", size);
    unsigned char *plan = malloc((size_t)size);
    if (!plan || fread(plan, 1, (size_t)size, f) != (size_t)size) fail("cannot read the plan %s", argv[1]);
    fclose(f);

    Reader r = {plan, (size_t)size, 0};
    if (memcmp(take(&r, strlen(MAGIC), "the magic"), MAGIC, strlen(MAGIC)) != 0) fail("not a requesters plan");
    uint32_t n = take32(&r, "the requester count");
    uint32_t flags = take32(&r, "the flags");
    double warmup = take_f64(&r, "the warm-up");
    double seconds = take_f64(&r, "the window");
    double empty_limit = take_f64(&r, "the empty-window limit");
    uint32_t unix_kind = take32(&r, "the address kind");
    uint32_t where_len;
    unsigned char *where = take_part(&r, &where_len, "the address");
    uint32_t port = take32(&r, "the port");
    if (n == 0 || n > MAX_CONNS) fail("plan file: %u requesters (1..%u allowed)", n, MAX_CONNS);
    if (!(warmup >= 0 && warmup < 86400 && seconds > 0 && seconds < 86400 && empty_limit >= 0 && empty_limit < 86400))
        fail("plan file: warm-up %g s, window %g s, empty-window limit %g s out of range", warmup, seconds, empty_limit);
    sync_puts = (int)(flags & 1u);
    char *host = malloc(where_len + 1);
    memcpy(host, where, where_len);
    host[where_len] = 0;
    if (memchr(host, 0, where_len)) fail("plan file: the address holds a NUL byte");
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%u", port);

    Conn *conns = calloc(n, sizeof *conns);
    for (uint32_t i = 0; i < n; i++) {
        Conn *c = &conns[i];
        c->hello = take_part(&r, &c->hello_len, "a HELLO frame");
        c->get = take_part(&r, &c->get_len, "a get-wait frame");
        c->ring_len = take32(&r, "the ring length");
        if (c->ring_len == 0 || c->ring_len > MAX_RING) fail("plan file: ring of %u requests (1..%u allowed)", c->ring_len, MAX_RING);
        c->ring = calloc(c->ring_len, sizeof *c->ring);
        for (uint32_t k = 0; k < c->ring_len; k++) {
            Block *b = &c->ring[k];
            b->id_at = take32(&r, "a msgId offset");
            b->body_len = take32(&r, "a body length");
            b->bytes = take_part(&r, &b->len, "a request block");
            if (b->len < 12 || b->id_at > b->len - 12) fail("plan file: msgId offset %u outside a block of %u bytes", b->id_at, b->len);
        }
        c->in_cap = 65536 * 2;
        c->in = malloc(c->in_cap);
    }
    if (r.left) fail("plan file: %zu bytes after the last requester", r.left);

    epfd = epoll_create1(0);
    if (epfd < 0) fail("epoll_create1: %s", strerror(errno));
    for (uint32_t i = 0; i < n; i++) {
        Conn *c = &conns[i];
        c->fd = open_socket((int)unix_kind, host, port_text);
        handshake(c);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) fail("epoll_ctl: %s", strerror(errno));
    }

    double start = now();
    now_seconds = (uint32_t)time(NULL);
    for (uint32_t i = 0; i < n; i++) send_request(&conns[i]);

    struct epoll_event events[256];
    double t0 = 0, cpu0 = 0, elapsed = 0, cpu = 0;
    double stop_deadline = 0;
    for (;;) {
        int ready = epoll_wait(epfd, events, 256, 20);
        if (ready < 0 && errno != EINTR) fail("epoll_wait: %s", strerror(errno));
        for (int e = 0; e < ready; e++) {
            Conn *c = events[e].data.ptr;
            if (events[e].events & EPOLLOUT) {
                flush_out(c);
                if (c->out_done == c->out_len) want_write(c, 0);
            }
            if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
        }
        double t = now();
        now_seconds = (uint32_t)time(NULL);
        if (!measuring && !stopping && t - start >= warmup) {
            measuring = 1;
            t0 = t;
            cpu0 = cpu_seconds();
            puts("measuring");
            fflush(stdout);
        } else if (measuring && (t - t0 >= seconds + empty_limit || (t - t0 >= seconds && responses.n))) {
            /* a window in which no request was answered goes on until one is, at most the limit */
            measuring = 0;
            elapsed = t - t0;
            cpu = cpu_seconds() - cpu0;
            puts("stopped");
            fflush(stdout);
            stopping = 1;
            stop_deadline = t + 5.0; /* requests in flight answer within a get-wait */
        }
        if (stopping) {
            uint32_t open = 0;
            for (uint32_t i = 0; i < n; i++) open += !conns[i].done;
            if (!open || t > stop_deadline) break;
        }
    }
    for (uint32_t i = 0; i < n; i++) close(conns[i].fd);
    double resp = median(&responses), put = median(&put_times), get = median(&get_times);
    printf("{\"count\": %llu, \"bytes\": %llu, \"elapsed\": %.6f, \"driver_cpu\": %.6f, \"puts\": %llu",
           (unsigned long long)counted, (unsigned long long)moved, elapsed, cpu, (unsigned long long)puts_total);
    if (resp >= 0)
        printf(", \"response_ms\": %.6f, \"put_ms\": %.6f, \"get_ms\": %.6f}\n", resp * 1000, put * 1000, get * 1000);
    else
        printf(", \"response_ms\": null, \"put_ms\": null, \"get_ms\": null}\n");
    fflush(stdout);
    return 0;
}
