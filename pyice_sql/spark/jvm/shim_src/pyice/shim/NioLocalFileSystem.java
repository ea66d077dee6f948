package pyice.shim;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, setting permissions through java.nio. Without Hadoop's native library (pyspark's
 * wheel has none) {@link RawLocalFileSystem} runs {@code chmod} as a child process for every file and folder it
 * creates (~4 ms each): a Spark write to a local table paid three on the driver for its staging folders and
 * several per task. pyice_sql's Spark writes name this class as their {@code fs.file.impl} (a per-write Hadoop
 * option, with the file system cache off for them: write/data_writer.py); the permissions set are the same.
 * No {@code .crc} side files either: every reader opens a file without one.
 */
public final class NioLocalFileSystem extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
        PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
    };

    @Override
    public String getScheme() {
        return "file";
    }

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
        if (!setPosix(pathToFile(p).toPath(), permission)) {  // not a POSIX file system: Hadoop's own way
            super.setPermission(p, permission);
        }
    }

    /** Sets {@code permission} on a local file through java.nio; false where the file system has no POSIX modes. */
    static boolean setPosix(java.nio.file.Path file, FsPermission permission) throws IOException {
        Set<PosixFilePermission> posix = EnumSet.noneOf(PosixFilePermission.class);
        short mode = permission.toShort();
        for (int bit = 0; bit < BITS.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                posix.add(BITS[bit]);
            }
        }
        try {
            Files.setPosixFilePermissions(file, posix);
            return true;
        } catch (UnsupportedOperationException e) {
            return false;
        }
    }
}
