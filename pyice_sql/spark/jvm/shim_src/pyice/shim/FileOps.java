package pyice.shim;

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.UnsupportedFileSystemException;

/**
 * File operations for the Hadoop catalog and maintenance, on any Hadoop scheme (driver side).
 *
 * <p>Atomicity: local files ({@code file:}) use a hard link, which fails atomically when the target exists
 * (POSIX rename would overwrite), and {@link #writeNew} publishes complete files only. Other schemes use
 * {@code FileSystem.create(overwrite=false)} and {@code FileContext.rename(.., Options.Rename.NONE)}, which are
 * atomic on HDFS; object stores give weaker guarantees whatever the API.
 */
public final class FileOps {
    private FileOps() {}

    /** Creates {@code path} holding {@code data}; false (and nothing written) if it already exists. */
    public static boolean writeNew(String path, byte[] data, Configuration conf) throws IOException {
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(conf);
        if (isLocal(fs)) {
            java.nio.file.Path target = local(fs, p);
            java.nio.file.Path parent = target.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            java.nio.file.Path tmp = target.resolveSibling("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(data);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            try {
                return linkNoClobber(tmp, target);
            } finally {
                Files.deleteIfExists(tmp);
            }
        }
        try (FSDataOutputStream out = fs.create(p, false)) {
            out.write(data);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /** Renames {@code src} to {@code dst}; false (src untouched) if dst exists. Dst's parent must exist. */
    public static boolean renameNoOverwrite(String src, String dst, Configuration conf) throws IOException {
        Path s = new Path(src);
        Path d = new Path(dst);
        FileSystem fs = d.getFileSystem(conf);
        if (isLocal(fs)) {
            java.nio.file.Path from = local(fs, s);
            if (!linkNoClobber(from, local(fs, d))) {
                return false;
            }
            fs.delete(s, false); // also removes a Hadoop .crc sibling; no-op if the move fallback was used
            return true;
        }
        try {
            FileContext.getFileContext(d.toUri(), conf).rename(s, d, Options.Rename.NONE);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (UnsupportedFileSystemException e) {
            // No FileContext binding for this scheme: check, then rename (not atomic).
            if (fs.exists(d)) {
                return false;
            }
            if (!fs.rename(s, d)) {
                throw new IOException("rename failed: " + src + " -> " + dst);
            }
            return true;
        }
    }

    /** The whole content of a file. */
    public static byte[] readAll(String path, Configuration conf) throws IOException {
        Path p = new Path(path);
        try (InputStream in = p.getFileSystem(conf).open(p)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[65536];
            for (int n; (n = in.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        }
    }

    /** Deletes a file (or a directory tree if {@code recursive}); false if nothing was deleted. */
    public static boolean delete(String path, boolean recursive, Configuration conf) throws IOException {
        Path p = new Path(path);
        return p.getFileSystem(conf).delete(p, recursive);
    }

    public static boolean exists(String path, Configuration conf) throws IOException {
        Path p = new Path(path);
        return p.getFileSystem(conf).exists(p);
    }

    public static boolean isDir(String path, Configuration conf) throws IOException {
        Path p = new Path(path);
        try {
            return p.getFileSystem(conf).getFileStatus(p).isDirectory();
        } catch (FileNotFoundException e) {
            return false;
        }
    }

    public static boolean mkdirs(String path, Configuration conf) throws IOException {
        Path p = new Path(path);
        return p.getFileSystem(conf).mkdirs(p);
    }

    public static long fileLength(String path, Configuration conf) throws IOException {
        Path p = new Path(path);
        return p.getFileSystem(conf).getFileStatus(p).getLen();
    }

    /**
     * Lists {@code dir} as a JSON array of {"path", "length", "modified" (ms since epoch), "dir"}: with
     * {@code recursive}, every file below it (no directories); otherwise its direct children, directories
     * included. A missing directory gives "[]".
     */
    public static String list(String dir, boolean recursive, Configuration conf) throws IOException {
        Path p = new Path(dir);
        FileSystem fs = p.getFileSystem(conf);
        StringBuilder sb = new StringBuilder("[");
        try {
            if (recursive) {
                RemoteIterator<LocatedFileStatus> it = fs.listFiles(p, true);
                while (it.hasNext()) {
                    entry(sb, it.next());
                }
            } else {
                for (FileStatus st : fs.listStatus(p)) {
                    entry(sb, st);
                }
            }
        } catch (FileNotFoundException e) {
            return "[]";
        }
        return sb.append(']').toString();
    }

    private static void entry(StringBuilder sb, FileStatus st) {
        sb.append(sb.length() > 1 ? ",{" : "{");
        Json.key(sb, "path");
        Json.str(sb, st.getPath().toString()).append(',');
        Json.key(sb, "length").append(st.getLen()).append(',');
        Json.key(sb, "modified").append(st.getModificationTime()).append(',');
        Json.key(sb, "dir").append(st.isDirectory()).append('}');
    }

    static boolean isLocal(FileSystem fs) {
        return fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem;
    }

    /** The local file Hadoop's own local file system opens for {@code p} (its URI decoded as Hadoop decodes it). */
    static java.nio.file.Path local(FileSystem fs, Path p) {
        return (fs instanceof LocalFileSystem ? ((LocalFileSystem) fs).pathToFile(p)
            : ((RawLocalFileSystem) fs).pathToFile(p)).toPath();
    }

    /** Hard-links {@code src} as {@code dst}; false if dst exists. */
    private static boolean linkNoClobber(java.nio.file.Path src, java.nio.file.Path dst) throws IOException {
        try {
            Files.createLink(dst, src);
            return true;
        } catch (java.nio.file.FileAlreadyExistsException e) {
            return false;
        } catch (NoSuchFileException e) {
            throw new FileNotFoundException(e.getMessage());
        } catch (UnsupportedOperationException | IOException e) {
            // No hard links on this file system: fall back to a move that checks first (not atomic).
            try {
                Files.move(src, dst);
                return true;
            } catch (java.nio.file.FileAlreadyExistsException e2) {
                return false;
            }
        }
    }
}
