package tms.fence;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;

/** Hadoop's local file system, with deletes and renames held to {@link Fence}'s roots. */
public class FencedLocalFileSystem extends LocalFileSystem {
  private Fence.Root[] confRoots;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    confRoots = Fence.fromConf(conf);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    Fence.check("delete", makeQualified(f), confRoots);
    return super.delete(f, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.check("rename to", makeQualified(dst), confRoots);
    return super.rename(src, dst);
  }
}
