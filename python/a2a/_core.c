/*
 * _core.c - the CPython extension under the a2a package: liba2a's calls (a2a.h) for Python.
 *
 * Two types: Job (one a2a_job) and SharedBuffer (memory from a2a_buffer_alloc, exported with
 * the buffer protocol). Data goes in as any C-contiguous object with the buffer protocol, or
 * as an address and a byte length (torch tensors, which have no buffer protocol); counts and
 * displacements as 1-D int64 buffers (numpy arrays, used in place) or sequences of ints.
 * Every liba2a call runs with the GIL released. A failed call raises the exception that
 * a2a._errors.from_status builds from the status and liba2a's message.
 *
 * A Job with live SharedBuffers keeps its a2a_job open until the last of them is gone (liba2a
 * unmaps a job's buffers when it closes): close() then only refuses further calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "a2a.h"

#define CORE_SMALL 64 /* groups up to this size need no heap for their counts */

static PyObject *core_from_status; /* a2a._errors.from_status(status, message) */

typedef struct {
    PyObject_HEAD a2a_job *job;
    int closed;         /* close() was called: no more calls */
    Py_ssize_t buffers; /* live SharedBuffers */
    Py_ssize_t calls;   /* calls in liba2a now, the GIL released (other threads may close) */
} core_job;

typedef struct {
    PyObject_HEAD core_job *owner;
    void *ptr;
    size_t len;
    Py_ssize_t exports;
} core_buf;

static PyTypeObject core_job_type;
static PyTypeObject core_buf_type;

/* core_raise sets the exception of status st with message msg; returns NULL. */
static PyObject *
core_raise(a2a_status st, const char *msg)
{
    PyObject *exc = PyObject_CallFunction(core_from_status, "is", (int)st, msg);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static PyObject *
core_invalid(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return core_raise(A2A_ERR_INVALID_ARGUMENT, msg);
}

static int
core_usable(core_job *j)
{
    if (j->job == NULL || j->closed) {
        core_raise(A2A_ERR_UNAVAILABLE, "the job is closed");
        return 0;
    }
    return 1;
}

static void core_job_release(core_job *self);

/* core_enter returns the job for a call about to release the GIL, and counts it: a close() from
 * another thread meanwhile leaves the job open until the call has left (core_leave), instead
 * of freeing it under the call. */
static a2a_job *
core_enter(core_job *self)
{
    self->calls++;
    return self->job;
}

/* core_leave ends what core_enter began (the GIL held); the last call out of a job closed
 * meanwhile closes it. */
static void
core_leave(core_job *self)
{
    if (--self->calls == 0 && self->closed)
        core_job_release(self);
}

/* ---- int64 arrays ---------------------------------------------------------------------- */

typedef struct {
    const int64_t *v; /* the values */
    Py_ssize_t n;
    Py_buffer view; /* when v points into a buffer */
    int has_view;
    int64_t *heap; /* when v was converted */
    int64_t small[CORE_SMALL];
} core_i64;

static void
core_i64_fini(core_i64 *a)
{
    if (a->has_view)
        PyBuffer_Release(&a->view);
    PyMem_Free(a->heap);
    a->has_view = 0;
    a->heap = NULL;
}

/* core_i64_get reads o (an int64 buffer or a sequence of ints) into a; name is the argument's
 * name for the messages. Negative values are refused. Returns 0, or -1 with an exception. */
static int
core_i64_get(core_i64 *a, PyObject *o, const char *name)
{
    a->has_view = 0;
    a->heap = NULL;
    if (PyObject_CheckBuffer(o) && PyObject_GetBuffer(o, &a->view, PyBUF_FORMAT | PyBUF_ND) == 0) {
        const char *f = a->view.format != NULL ? a->view.format : "B";
        if (a->view.ndim != 1) {
            int nd = a->view.ndim;
            PyBuffer_Release(&a->view);
            core_invalid("%s must be 1-D (it has %d dimensions)", name, nd);
            return -1;
        }
        if (f[0] == '<' || f[0] == '=' || f[0] == '@')
            f++;
        if (a->view.ndim == 1 && a->view.itemsize == 8 && (f[0] == 'q' || f[0] == 'l') &&
            f[1] == '\0' && PyBuffer_IsContiguous(&a->view, 'C')) {
            a->has_view = 1;
            a->v = a->view.buf;
            a->n = a->view.shape[0];
            goto check;
        }
        PyBuffer_Release(&a->view); /* another type: element by element below */
    }
    PyErr_Clear();
    PyObject *seq = PySequence_Fast(o, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of ints or an int64 array, not %.100s",
                     name, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *v = a->small;
    if (n > CORE_SMALL && (v = a->heap = PyMem_Malloc((size_t)n * sizeof(int64_t))) == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PySequence_Fast_GET_ITEM(seq, i), *ix = PyNumber_Index(it);
        if (ix == NULL) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] is not an int (%.100s)", name, i,
                         Py_TYPE(it)->tp_name);
            Py_DECREF(seq);
            core_i64_fini(a);
            return -1;
        }
        long long x = PyLong_AsLongLong(ix);
        Py_DECREF(ix);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            core_invalid("%s[%zd] does not fit in int64", name, i);
            Py_DECREF(seq);
            core_i64_fini(a);
            return -1;
        }
        v[i] = x;
    }
    Py_DECREF(seq);
    a->v = v;
    a->n = n;
check:
    for (Py_ssize_t i = 0; i < a->n; i++)
        if (a->v[i] < 0) {
            core_invalid("%s[%zd] is negative (%lld)", name, i, (long long)a->v[i]);
            core_i64_fini(a);
            return -1;
        }
    return 0;
}

/* ---- data buffers ---------------------------------------------------------------------- */

typedef struct {
    void *ptr;
    size_t bytes;
    Py_buffer view;
    int has_view;
} core_data;

/* core_data_get takes o, a C-contiguous buffer (writable when write) or an int address whose
 * length is nbytes; name is the argument's name. Returns 0, or -1 with an exception. */
static int
core_data_get(core_data *d, PyObject *o, Py_ssize_t nbytes, int write, const char *name)
{
    d->has_view = 0;
    if (PyLong_Check(o)) {
        d->ptr = PyLong_AsVoidPtr(o);
        if (PyErr_Occurred())
            return -1;
        if (nbytes < 0) {
            core_invalid("%s: an address needs its length in bytes", name);
            return -1;
        }
        d->bytes = (size_t)nbytes;
        return 0;
    }
    int flags = PyBUF_ND | (write ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, &d->view, flags) != 0) {
        if (!PyErr_ExceptionMatches(PyExc_BufferError) &&
            !PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();
        if (!PyObject_CheckBuffer(o)) {
            PyErr_Format(PyExc_TypeError,
                         "%s must be a numpy array, a torch tensor or an object with the buffer "
                         "protocol, not %.100s",
                         name, Py_TYPE(o)->tp_name);
            return -1;
        }
        if (write && PyObject_GetBuffer(o, &d->view, PyBUF_ND) == 0) {
            PyBuffer_Release(&d->view);
            core_invalid("%s is read-only", name);
            return -1;
        }
        PyErr_Clear();
        core_invalid("%s is not C-contiguous (pass a C-contiguous copy: "
                     "numpy.ascontiguousarray(x), x.contiguous() for torch)",
                     name);
        return -1;
    }
    d->has_view = 1;
    d->ptr = d->view.buf;
    d->bytes = (size_t)d->view.len;
    return 0;
}

static void
core_data_fini(core_data *d)
{
    if (d->has_view)
        PyBuffer_Release(&d->view);
    d->has_view = 0;
}

/* ---- Job ------------------------------------------------------------------------------- */

static int
core_job_init(core_job *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"worker_url", "rank", NULL};
    const char *url = NULL;
    long long rank = -1;
    a2a_job *job = NULL;
    a2a_status st;
    char msg[1024];

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zL:Job", names, &url, &rank))
        return -1;
    if (self->job != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Job is already open");
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS;
    st = a2a_job_open(&job, url, rank);
    if (st != A2A_OK)
        snprintf(msg, sizeof(msg), "%s", a2a_job_error(NULL));
    Py_END_ALLOW_THREADS;
    if (st != A2A_OK) {
        core_raise(st, msg);
        return -1;
    }
    self->job = job;
    self->closed = 0;
    return 0;
}

static void
core_job_release(core_job *self)
{
    if (self->job != NULL && self->buffers == 0 && self->calls == 0) {
        a2a_job *job = self->job;
        self->job = NULL;
        Py_BEGIN_ALLOW_THREADS;
        a2a_job_close(job);
        Py_END_ALLOW_THREADS;
    }
}

static void
core_job_dealloc(core_job *self)
{
    self->closed = 1;
    core_job_release(self); /* buffers hold a reference: there are none left */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
core_job_close(core_job *self, PyObject *unused)
{
    (void)unused;
    self->closed = 1;
    core_job_release(self);
    Py_RETURN_NONE;
}

static PyObject *
core_job_mode(core_job *self, PyObject *unused)
{
    (void)unused;
    if (!core_usable(self))
        return NULL;
    return PyLong_FromLong((long)a2a_job_mode(self->job));
}

static PyObject *
core_fail(core_job *self, a2a_status st, const char *msg)
{
    (void)self;
    return core_raise(st, msg);
}

/* all_to_all_v(group, dtype, send, send_nbytes, send_counts, send_displacements,
 *              recv, recv_nbytes, recv_counts, recv_displacements, timeout_ms, group_size):
 * each of the four arrays must have group_size elements (liba2a reads that many). With
 * recv_counts and recv_displacements both None, liba2a discovers the counts (the slices land
 * packed in rank order from element 0 of recv, whose length is the capacity) and the call
 * returns them as a list of ints; else it returns None. */
static PyObject *
core_job_a2av_run(core_job *self, PyObject *const *argv, Py_ssize_t argc, int dry)
{
    static const char *cnames[4] = {"send_counts", "send_displacements", "recv_counts",
                                    "recv_displacements"};
    core_i64 c[4];
    core_data sd, rd;
    a2a_alltoallv_args a;
    const char *group = NULL;
    a2a_status st = A2A_OK;
    char msg[1024];
    PyObject *ret = NULL;
    int nc = 0, dtype;
    size_t esize;

    if (argc != 12) {
        PyErr_SetString(PyExc_TypeError, "_core.Job.all_to_all_v takes 12 arguments");
        return NULL;
    }
    if (!core_usable(self))
        return NULL;
    if (argv[0] != Py_None && (group = PyUnicode_AsUTF8(argv[0])) == NULL)
        return NULL;
    dtype = PyLong_AsLong(argv[1]);
    if (dtype == -1 && PyErr_Occurred())
        return NULL;
    if (dtype < 0 || dtype > A2A_BFLOAT16)
        return core_invalid("dtype %d is not one of the 12 data types", dtype);
    esize = a2a_dtype_size((a2a_dtype)dtype);
    Py_ssize_t snb = PyLong_AsSsize_t(argv[3]), rnb = PyLong_AsSsize_t(argv[7]);
    long long timeout = PyLong_AsLongLong(argv[10]);
    Py_ssize_t gsize = PyLong_AsSsize_t(argv[11]);
    if (PyErr_Occurred())
        return NULL;
    int discover = argv[8] == Py_None && argv[9] == Py_None;
    if (gsize < 0 || (discover && (size_t)gsize > SIZE_MAX / sizeof(int64_t)))
        return core_invalid("group_size %zd is out of range", gsize);
    for (nc = 0; nc < (discover ? 2 : 4); nc++)
        if (core_i64_get(&c[nc], argv[nc < 2 ? 4 + nc : 6 + nc], cnames[nc]) != 0)
            goto out;
    for (int i = 0; i < nc; i++)
        if (c[i].n != gsize) {
            core_invalid("%s has %zd elements, but group \"%s\" has %zd ranks (one element per "
                         "group rank)",
                         cnames[i], c[i].n, group != NULL ? group : A2A_WORLD_GROUP, gsize);
            goto out;
        }
    if (core_data_get(&sd, argv[2], snb, 0, "send_data") != 0)
        goto out;
    if (core_data_get(&rd, argv[6], rnb, 1, "out") != 0) {
        core_data_fini(&sd);
        goto out;
    }
    if (sd.bytes % esize != 0 || rd.bytes % esize != 0) {
        core_invalid("%s has %zu bytes, not a whole number of %zu-byte elements",
                     sd.bytes % esize != 0 ? "send_data" : "out",
                     sd.bytes % esize != 0 ? sd.bytes : rd.bytes, esize);
        goto data_out;
    }
    memset(&a, 0, sizeof(a));
    a.group = group;
    a.dtype = (a2a_dtype)dtype;
    a.send_data = sd.ptr;
    a.send_len = sd.bytes / esize;
    a.send_counts = c[0].v;
    a.send_displacements = c[1].v;
    a.recv_data = rd.ptr;
    a.recv_len = rd.bytes / esize;
    a.recv_counts = discover ? NULL : c[2].v;
    a.recv_displacements = discover ? NULL : c[3].v;
    a.timeout_ms = timeout;
    if (dry) {
        ret = Py_NewRef(Py_None);
        goto data_out;
    }
    int64_t *got = NULL;
    if (discover && (got = PyMem_Calloc(gsize > 0 ? (size_t)gsize : 1, sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto data_out;
    }
    a.recv_counts_out = got;
    a2a_job *job = core_enter(self);
    Py_BEGIN_ALLOW_THREADS;
    st = a2a_all_to_all_v(job, &a);
    if (st != A2A_OK)
        snprintf(msg, sizeof(msg), "%s", a2a_job_error(job));
    Py_END_ALLOW_THREADS;
    core_leave(self);
    if (st != A2A_OK) {
        core_fail(self, st, msg);
    } else if (discover) {
        if ((ret = PyList_New(gsize)) != NULL)
            for (Py_ssize_t i = 0; i < gsize; i++) {
                PyObject *x = PyLong_FromLongLong((long long)got[i]);
                if (x == NULL) {
                    Py_CLEAR(ret);
                    break;
                }
                PyList_SET_ITEM(ret, i, x);
            }
    } else {
        ret = Py_NewRef(Py_None);
    }
    PyMem_Free(got);
data_out:
    core_data_fini(&sd);
    core_data_fini(&rd);
out:
    while (nc-- > 0)
        core_i64_fini(&c[nc]);
    return ret;
}

static PyObject *
core_job_a2av(core_job *self, PyObject *const *argv, Py_ssize_t argc)
{
    return core_job_a2av_run(self, argv, argc, 0);
}

/* dry_run(...): all_to_all_v's arguments taken and checked as it does, without the call (for
 * measuring what the extension costs) */
static PyObject *
core_job_dry_run(core_job *self, PyObject *const *argv, Py_ssize_t argc)
{
    return core_job_a2av_run(self, argv, argc, 1);
}

/* The group calls: one shape for all, the GIL released around liba2a. */
#define CORE_CALL(call)                                           \
    do {                                                          \
        a2a_job *job = core_enter(self);                          \
        Py_BEGIN_ALLOW_THREADS;                                   \
        st = (call);                                              \
        if (st != A2A_OK)                                         \
            snprintf(msg, sizeof(msg), "%s", a2a_job_error(job)); \
        Py_END_ALLOW_THREADS;                                     \
        core_leave(self);                                         \
        if (st != A2A_OK)                                         \
            return core_fail(self, st, msg);                      \
    } while (0)

static PyObject *
core_job_create_group(core_job *self, PyObject *args)
{
    const char *group;
    PyObject *ranks;
    core_i64 r;
    a2a_status st;
    char msg[1024];

    if (!PyArg_ParseTuple(args, "sO:create_group", &group, &ranks) || !core_usable(self))
        return NULL;
    if (core_i64_get(&r, ranks, "rank_ids") != 0)
        return NULL;
    a2a_job *job = core_enter(self);
    Py_BEGIN_ALLOW_THREADS;
    st = a2a_create_group(job, group, (size_t)r.n, r.v);
    if (st != A2A_OK)
        snprintf(msg, sizeof(msg), "%s", a2a_job_error(job));
    Py_END_ALLOW_THREADS;
    core_leave(self);
    core_i64_fini(&r);
    if (st != A2A_OK)
        return core_fail(self, st, msg);
    Py_RETURN_NONE;
}

static PyObject *
core_job_destroy_group(core_job *self, PyObject *args)
{
    const char *group;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "s:destroy_group", &group) || !core_usable(self))
        return NULL;
    CORE_CALL(a2a_destroy_group(job, group));
    Py_RETURN_NONE;
}

static PyObject *
core_job_rank_size(core_job *self, PyObject *args)
{
    const char *group = NULL;
    int64_t v = 0;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "z:get_rank_size", &group) || !core_usable(self))
        return NULL;
    CORE_CALL(a2a_get_rank_size(job, group, &v));
    return PyLong_FromLongLong(v);
}

static PyObject *
core_job_rank_id(core_job *self, PyObject *args)
{
    const char *group = NULL;
    int64_t v = 0;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "z:get_rank_id", &group) || !core_usable(self))
        return NULL;
    CORE_CALL(a2a_get_rank_id(job, group, &v));
    return PyLong_FromLongLong(v);
}

static PyObject *
core_job_world_rank(core_job *self, PyObject *args)
{
    const char *group = NULL;
    long long r;
    int64_t v = 0;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "zL:get_world_rank_from_group_rank", &group, &r) ||
        !core_usable(self))
        return NULL;
    CORE_CALL(a2a_get_world_rank_from_group_rank(job, group, r, &v));
    return PyLong_FromLongLong(v);
}

static PyObject *
core_job_group_rank(core_job *self, PyObject *args)
{
    const char *group = NULL;
    long long r;
    int64_t v = 0;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "zL:get_group_rank_from_world_rank", &group, &r) ||
        !core_usable(self))
        return NULL;
    CORE_CALL(a2a_get_group_rank_from_world_rank(job, group, r, &v));
    return PyLong_FromLongLong(v);
}

/* buffer(nbytes) -> SharedBuffer: nbytes of memory shared with the worker, zeroed */
static PyObject *
core_job_buffer(core_job *self, PyObject *args)
{
    Py_ssize_t n;
    void *p = NULL;
    a2a_status st;
    char msg[1024];
    if (!PyArg_ParseTuple(args, "n:buffer", &n) || !core_usable(self))
        return NULL;
    if (n <= 0)
        return core_invalid("a shared buffer needs at least one byte (got %zd)", n);
    CORE_CALL(a2a_buffer_alloc(job, (size_t)n, &p));
    core_buf *b = PyObject_New(core_buf, &core_buf_type);
    if (b == NULL) {
        a2a_buffer_free(self->job, p);
        return NULL;
    }
    Py_INCREF(self);
    b->owner = self;
    b->ptr = p;
    b->len = (size_t)n;
    b->exports = 0;
    self->buffers++;
    return (PyObject *)b;
}

static PyMethodDef core_job_methods[] = {
    {"close", (PyCFunction)core_job_close, METH_NOARGS, "close()"},
    {"mode", (PyCFunction)core_job_mode, METH_NOARGS, "mode() -> 0 local, 1 remote"},
    {"all_to_all_v", (PyCFunction)(void (*)(void))core_job_a2av, METH_FASTCALL,
     "all_to_all_v(group, dtype, send, send_nbytes, send_counts, send_displacements, recv, "
     "recv_nbytes, recv_counts, recv_displacements, timeout_ms)"},
    {"dry_run", (PyCFunction)(void (*)(void))core_job_dry_run, METH_FASTCALL,
     "dry_run(...): all_to_all_v's checks without the call"},
    {"create_group", (PyCFunction)core_job_create_group, METH_VARARGS, "create_group(name, ranks)"},
    {"destroy_group", (PyCFunction)core_job_destroy_group, METH_VARARGS, "destroy_group(name)"},
    {"get_rank_size", (PyCFunction)core_job_rank_size, METH_VARARGS, "get_rank_size(group)"},
    {"get_rank_id", (PyCFunction)core_job_rank_id, METH_VARARGS, "get_rank_id(group)"},
    {"get_world_rank_from_group_rank", (PyCFunction)core_job_world_rank, METH_VARARGS,
     "get_world_rank_from_group_rank(group, group_rank)"},
    {"get_group_rank_from_world_rank", (PyCFunction)core_job_group_rank, METH_VARARGS,
     "get_group_rank_from_world_rank(group, world_rank)"},
    {"buffer", (PyCFunction)core_job_buffer, METH_VARARGS, "buffer(nbytes) -> SharedBuffer"},
    {NULL, NULL, 0, NULL}};

static PyObject *
core_job_closed(core_job *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->job == NULL || self->closed);
}

static PyGetSetDef core_job_getset[] = {
    {"closed", (getter)core_job_closed, NULL, "whether close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject core_job_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "a2a._core.Job",
    .tp_basicsize = sizeof(core_job),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Job(worker_url=None, rank=-1): one rank's handle on its worker (a2a_job)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)core_job_init,
    .tp_dealloc = (destructor)core_job_dealloc,
    .tp_methods = core_job_methods,
    .tp_getset = core_job_getset,
};

/* ---- SharedBuffer ---------------------------------------------------------------------- */

static int
core_buf_get(core_buf *self, Py_buffer *view, int flags)
{
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, (Py_ssize_t)self->len, 0, flags) != 0)
        return -1;
    self->exports++;
    return 0;
}

static void
core_buf_release(core_buf *self, Py_buffer *view)
{
    (void)view;
    self->exports--;
}

static void
core_buf_dealloc(core_buf *self)
{
    core_job *j = self->owner;
    if (j != NULL) {
        if (j->job != NULL && self->ptr != NULL)
            a2a_buffer_free(j->job, self->ptr);
        j->buffers--;
        if (j->closed)
            core_job_release(j);
        Py_DECREF(j);
    }
    PyObject_Free(self);
}

static PyObject *
core_buf_nbytes(core_buf *self, void *unused)
{
    (void)unused;
    return PyLong_FromSize_t(self->len);
}

static PyObject *
core_buf_address(core_buf *self, void *unused)
{
    (void)unused;
    return PyLong_FromVoidPtr(self->ptr);
}

static PyGetSetDef core_buf_getset[] = {
    {"nbytes", (getter)core_buf_nbytes, NULL, "its length in bytes", NULL},
    {"address", (getter)core_buf_address, NULL, "its address", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyBufferProcs core_buf_procs = {(getbufferproc)core_buf_get,
                                       (releasebufferproc)core_buf_release};

static PyTypeObject core_buf_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "a2a._core.SharedBuffer",
    .tp_basicsize = sizeof(core_buf),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "memory shared with the worker (a2a_buffer_alloc), freed with its last reference",
    .tp_dealloc = (destructor)core_buf_dealloc,
    .tp_as_buffer = &core_buf_procs,
    .tp_getset = core_buf_getset,
};

/* ---- module ---------------------------------------------------------------------------- */

static PyObject *
core_status_name(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(a2a_status_name((a2a_status)s));
}

static PyObject *
core_dtype_size(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromSize_t(a2a_dtype_size((a2a_dtype)d));
}

/* recv_extent(recv_counts, recv_displacements) -> max(count + displacement), the elements a
 * receive buffer needs (0 when every count is 0) */
static PyObject *
core_recv_extent(PyObject *mod, PyObject *const *argv, Py_ssize_t argc)
{
    core_i64 c, d;
    int64_t end = 0;
    (void)mod;
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "recv_extent takes 2 arguments");
        return NULL;
    }
    if (core_i64_get(&c, argv[0], "recv_counts") != 0)
        return NULL;
    if (core_i64_get(&d, argv[1], "recv_displacements") != 0) {
        core_i64_fini(&c);
        return NULL;
    }
    /* arrays of the wrong length are refused by all_to_all_v, naming them */
    Py_ssize_t n = c.n < d.n ? c.n : d.n;
    for (Py_ssize_t i = 0; end >= 0 && i < n; i++) {
        if (c.v[i] == 0)
            continue;
        if (c.v[i] > INT64_MAX - d.v[i]) {
            core_invalid("recv slice %zd overflows: %lld elements at %lld", i, (long long)c.v[i],
                         (long long)d.v[i]);
            end = -1;
        } else if (c.v[i] + d.v[i] > end) {
            end = c.v[i] + d.v[i];
        }
    }
    core_i64_fini(&c);
    core_i64_fini(&d);
    return end < 0 ? NULL : PyLong_FromLongLong(end);
}

/* nop(): nothing, for measuring the cost of a call into the extension */
static PyObject *
core_nop(PyObject *mod, PyObject *const *argv, Py_ssize_t argc)
{
    (void)mod;
    (void)argv;
    (void)argc;
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"status_name", core_status_name, METH_O, "status_name(status) -> str"},
    {"dtype_size", core_dtype_size, METH_O, "dtype_size(dtype) -> int"},
    {"recv_extent", (PyCFunction)(void (*)(void))core_recv_extent, METH_FASTCALL,
     "recv_extent(recv_counts, recv_displacements) -> int"},
    {"nop", (PyCFunction)(void (*)(void))core_nop, METH_FASTCALL, "nop(*args)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "a2a._core",
    .m_doc = "liba2a's calls (a2a.h) for the a2a package",
    .m_size = -1,
    .m_methods = core_methods,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    PyObject *m, *errors;
    if (PyType_Ready(&core_job_type) < 0 || PyType_Ready(&core_buf_type) < 0)
        return NULL;
    if ((errors = PyImport_ImportModule("a2a._errors")) == NULL)
        return NULL;
    core_from_status = PyObject_GetAttrString(errors, "from_status");
    Py_DECREF(errors);
    if (core_from_status == NULL || (m = PyModule_Create(&core_module)) == NULL)
        return NULL;
    Py_INCREF(&core_job_type);
    Py_INCREF(&core_buf_type);
    if (PyModule_AddObject(m, "Job", (PyObject *)&core_job_type) < 0 ||
        PyModule_AddObject(m, "SharedBuffer", (PyObject *)&core_buf_type) < 0 ||
        PyModule_AddIntConstant(m, "GROUP_NAME_MAX", A2A_GROUP_NAME_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
