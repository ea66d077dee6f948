package pyice.shim;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.StandardOpenOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.PositionOutputStream;

/**
 * A Parquet {@link OutputFile} for the files the shim writes in tasks: on the local disk through java.nio, elsewhere
 * through Hadoop. Without Hadoop's native library (pyspark's wheel has none) Hadoop's local file system sets the
 * permissions of every file it creates, and of its {@code .crc} side file, by running {@code chmod} as a child
 * process: two process starts per file (~4 ms each), paid on the write task's critical path for every delete file.
 * java.nio creates the file and sets the permission Hadoop would ({@code 0666} less {@code fs.permissions.umask-mode},
 * not the process umask), with no checksum side file (every reader opens a file without one).
 */
final class LocalOutputFile implements OutputFile {
    private static final int BUFFER = 64 * 1024;
    private final java.nio.file.Path path;
    private final FsPermission permission;

    private LocalOutputFile(java.nio.file.Path path, FsPermission permission) {
        this.path = path;
        this.permission = permission;
    }

    /** {@code path} as an OutputFile: local through java.nio, any other scheme through Hadoop. */
    static OutputFile of(Path path, Configuration conf) throws IOException {
        FileSystem fs = path.getFileSystem(conf);
        if (!FileOps.isLocal(fs)) {
            return HadoopOutputFile.fromPath(path, conf);
        }
        FsPermission permission = FsPermission.getFileDefault().applyUMask(FsPermission.getUMask(conf));
        return new LocalOutputFile(FileOps.local(fs, path), permission);
    }

    @Override
    public PositionOutputStream create(long blockSizeHint) throws IOException {
        return open(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    }

    @Override
    public PositionOutputStream createOrOverwrite(long blockSizeHint) throws IOException {
        return open(StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
    }

    @Override
    public boolean supportsBlockSize() {
        return false;
    }

    @Override
    public long defaultBlockSize() {
        return 0;
    }

    @Override
    public String toString() {
        return path.toUri().toString();
    }

    private PositionOutputStream open(OpenOption... options) throws IOException {
        java.nio.file.Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        OutputStream out = new BufferedOutputStream(Files.newOutputStream(path, options), BUFFER);
        try {
            NioLocalFileSystem.setPosix(path, permission);
        } catch (IOException e) {
            out.close();
            throw e;
        }
        return new PositionOutputStream() {
            private long pos;

            @Override
            public long getPos() {
                return pos;
            }

            @Override
            public void write(int b) throws IOException {
                out.write(b);
                pos++;
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                out.write(b, off, len);
                pos += len;
            }

            @Override
            public void flush() throws IOException {
                out.flush();
            }

            @Override
            public void close() throws IOException {
                out.close();
            }
        };
    }
}
