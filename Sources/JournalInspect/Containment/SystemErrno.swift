#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An errno as a message quotes it: the C library's words and the constant's name, so support
/// can search for either (`No space left on device (ENOSPC)`).
struct SystemErrno: CustomStringConvertible, Equatable {
    let code: Int32

    init(_ code: Int32) {
        self.code = code
    }

    /// The constant's name; `errno <n>` for one this table does not know.
    var name: String {
        switch code {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case ENXIO: "ENXIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EBUSY: "EBUSY"
        case EEXIST: "EEXIST"
        case EXDEV: "EXDEV"
        case ENODEV: "ENODEV"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EINVAL: "EINVAL"
        case ENFILE: "ENFILE"
        case EMFILE: "EMFILE"
        case ETXTBSY: "ETXTBSY"
        case EFBIG: "EFBIG"
        case ENOSPC: "ENOSPC"
        case ESPIPE: "ESPIPE"
        case EROFS: "EROFS"
        case EMLINK: "EMLINK"
        case ENAMETOOLONG: "ENAMETOOLONG"
        case ELOOP: "ELOOP"
        case EDQUOT: "EDQUOT"
        case ESTALE: "ESTALE"
        case EOVERFLOW: "EOVERFLOW"
        case ENOTSUP: "ENOTSUP"
        default: "errno \(code)"
        }
    }

    var description: String {
        "\(String(cString: strerror(code))) (\(name))"
    }
}
