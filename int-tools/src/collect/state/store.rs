//! The state's file: one redb database (`DIR/collect.redb`) holding one
//! table of encoded parts ([`Part`]) beside the format they are written
//! in. Each write replaces every part in one transaction: a crash leaves
//! the last whole state, never half of two.

use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, TableDefinition};

/// The parts' encoding; a state of another is refused, never guessed at.
pub const FORMAT: u32 = 1;

const TABLE: TableDefinition<&str, &[u8]> = TableDefinition::new("collect-state");
const FORMAT_KEY: &str = "format";

/// What a state holds, each part encoded on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The readers' books, merged.
    Books,
    /// The web view's board.
    Board,
}

impl Part {
    pub fn key(self) -> &'static str {
        match self {
            Part::Books => "books",
            Part::Board => "board",
        }
    }
}

/// Why a state cannot be opened, read or written: each names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("--state {}: cannot create the folder: {source}", dir.display())]
    Folder { dir: PathBuf, source: std::io::Error },
    #[error("--state {}: another collect keeps its state here (hint: give each collect a --state of its own)", file.display())]
    InUse { file: PathBuf },
    #[error("--state {}: not a state collect can read ({source}) (hint: move the file away to start with empty books, or give another --state)", file.display())]
    Unreadable { file: PathBuf, source: redb::Error },
    #[error("--state {}: written in state format {found}, this collect reads format {FORMAT} (hint: run the int-tools that wrote it, or move the file away to start with empty books)", file.display())]
    Format { file: PathBuf, found: String },
    #[error("--state {}: its {part} cannot be read: {cause} (hint: move the file away to start with empty books)", file.display())]
    Decode { file: PathBuf, part: &'static str, cause: String },
    #[error("--state {}: cannot write: {source}", file.display())]
    Write { file: PathBuf, source: redb::Error },
}

/// The open state file (locked: one collect at a time).
pub struct Store {
    file: PathBuf,
    db: Database,
}

impl Store {
    /// Opens `dir/collect.redb`, creating the folder and the file.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Folder { dir: dir.into(), source })?;
        let file = dir.join("collect.redb");
        let db = Database::create(&file).map_err(|error| match error {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::InUse { file: file.clone() },
            other => StoreError::Unreadable { file: file.clone(), source: other.into() },
        })?;
        Ok(Store { file, db })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Each part's bytes (`None`: a new state, or a part never written);
    /// a state of another format is refused.
    pub fn read(&self, parts: &[Part]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let unreadable = |source: redb::Error| StoreError::Unreadable { file: self.file.clone(), source };
        let read = self.db.begin_read().map_err(|e| unreadable(e.into()))?;
        let table = match read.open_table(TABLE) {
            Ok(table) => table,
            // A new file; one with tables of another program's is refused.
            Err(redb::TableError::TableDoesNotExist(_)) => {
                let mut tables = read.list_tables().map_err(|e| unreadable(e.into()))?;
                if tables.next().is_some() {
                    let found = "none (another program's file)".to_string();
                    return Err(StoreError::Format { file: self.file.clone(), found });
                }
                return Ok(vec![None; parts.len()]);
            }
            Err(other) => return Err(unreadable(other.into())),
        };
        let get = |key: &str| -> Result<Option<Vec<u8>>, StoreError> {
            let value = table.get(key).map_err(|e| unreadable(e.into()))?;
            Ok(value.map(|v| v.value().to_vec()))
        };
        let format = get(FORMAT_KEY)?;
        if format.as_deref() != Some(&FORMAT.to_be_bytes()[..]) {
            let found = match format.as_deref().map(<[u8; 4]>::try_from) {
                Some(Ok(word)) => u32::from_be_bytes(word).to_string(),
                Some(Err(_)) => "unknown".to_string(),
                None => "none".to_string(),
            };
            return Err(StoreError::Format { file: self.file.clone(), found });
        }
        parts.iter().map(|part| get(part.key())).collect()
    }

    /// Replaces the state with `parts` (a part left out is removed), in
    /// one transaction.
    pub fn write(&mut self, parts: &[(Part, &[u8])]) -> Result<(), StoreError> {
        let failed = |source: redb::Error| StoreError::Write { file: self.file.clone(), source };
        let write = self.db.begin_write().map_err(|e| failed(e.into()))?;
        {
            let mut table = write.open_table(TABLE).map_err(|e| failed(e.into()))?;
            table.insert(FORMAT_KEY, &FORMAT.to_be_bytes()[..]).map_err(|e| failed(e.into()))?;
            for part in [Part::Books, Part::Board] {
                match parts.iter().find(|(p, _)| *p == part) {
                    Some((_, bytes)) => table.insert(part.key(), *bytes).map(drop),
                    None => table.remove(part.key()).map(drop),
                }
                .map_err(|e| failed(e.into()))?;
            }
        }
        write.commit().map_err(|e| failed(e.into()))?;
        // The pages the state before held, given back: the file stays
        // near the state's size rather than growing by free pages.
        while self.db.compact().map_err(|e| failed(e.into()))? {}
        Ok(())
    }
}
