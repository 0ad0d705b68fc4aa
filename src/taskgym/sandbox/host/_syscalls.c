/* write, pread and recv_pid that keep the GIL: see _gil_held.py for why.
 *
 * Each call is one system call on a descriptor that cannot block (a short write into a
 * non-blocking pipe, a read of what poll() said is there, a read of a tmpfs file), so
 * holding the GIL costs nothing, while releasing it would make the thread queue to take
 * it back. Errors raise OSError (BlockingIOError, BrokenPipeError...) as os.* does;
 * EINTR is retried. Reads return at most CHUNK bytes.
 */
#define _GNU_SOURCE /* struct ucred */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK 65536

static int as_fd(PyObject *obj, int *fd) {
    long value = PyLong_AsLong(obj);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (value < 0 || value > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "a file descriptor must be a non-negative int");
        return -1;
    }
    *fd = (int)value;
    return 0;
}

static int as_size(PyObject *obj, size_t *size) {
    Py_ssize_t value = PyLong_AsSsize_t(obj);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (value < 0) {
        PyErr_SetString(PyExc_ValueError, "a size must not be negative");
        return -1;
    }
    *size = value < CHUNK ? (size_t)value : CHUNK;
    return 0;
}

static PyObject *sys_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int fd;
    Py_buffer data;
    ssize_t done;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "write(fd, data) takes 2 arguments");
        return NULL;
    }
    if (as_fd(args[0], &fd) < 0 || PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0)
        return NULL;
    do {
        done = write(fd, data.buf, (size_t)data.len);
    } while (done < 0 && errno == EINTR);
    PyBuffer_Release(&data);
    if (done < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyLong_FromSsize_t(done);
}

static PyObject *pread_chunk(int fd, size_t size, off_t offset) {
    char buf[CHUNK];
    ssize_t got;
    do {
        got = pread(fd, buf, size, offset);
    } while (got < 0 && errno == EINTR);
    if (got < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    return PyBytes_FromStringAndSize(buf, got);
}

static PyObject *sys_pread(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int fd;
    size_t size;
    long long offset;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "pread(fd, size, offset) takes 3 arguments");
        return NULL;
    }
    if (as_fd(args[0], &fd) < 0 || as_size(args[1], &size) < 0)
        return NULL;
    offset = PyLong_AsLongLong(args[2]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    if (offset < 0) {
        PyErr_SetString(PyExc_ValueError, "an offset must not be negative");
        return NULL;
    }
    return pread_chunk(fd, size, (off_t)offset);
}

/* recvmsg on a Unix socket with SO_PASSCRED: the data and the pid of its writer (0 if the
 * kernel gave none). The room for ancillary data holds the credentials only: descriptors a
 * writer passed do not fit, and the kernel closes them. */
static PyObject *sys_recv_pid(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int fd;
    size_t size;
    char buf[CHUNK];
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(struct ucred))];
    } control;
    struct iovec iov;
    struct msghdr msg;
    struct cmsghdr *cmsg;
    struct ucred cred;
    ssize_t got;
    long pid = 0;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "recv_pid(fd, size) takes 2 arguments");
        return NULL;
    }
    if (as_fd(args[0], &fd) < 0 || as_size(args[1], &size) < 0)
        return NULL;
    do {
        iov.iov_base = buf;
        iov.iov_len = size;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.space;
        msg.msg_controllen = sizeof control.space;
        got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS
                && cmsg->cmsg_len >= CMSG_LEN(sizeof cred)) {
            memcpy(&cred, CMSG_DATA(cmsg), sizeof cred);
            pid = (long)cred.pid;
            break;
        }
    }
    return Py_BuildValue("(y#l)", buf, (Py_ssize_t)got, pid);
}

static PyMethodDef methods[] = {
    {"write", (PyCFunction)(void (*)(void))sys_write, METH_FASTCALL,
     "write(fd, data) -> bytes written, keeping the GIL."},
    {"pread", (PyCFunction)(void (*)(void))sys_pread, METH_FASTCALL,
     "pread(fd, size, offset) -> up to min(size, 64 KiB) bytes, keeping the GIL."},
    {"recv_pid", (PyCFunction)(void (*)(void))sys_recv_pid, METH_FASTCALL,
     "recv_pid(fd, size) -> (up to min(size, 64 KiB) bytes, the writer's pid or 0), "
     "keeping the GIL."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_syscalls",
    "System calls that cannot block, made without releasing the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__syscalls(void) { return PyModule_Create(&module); }
