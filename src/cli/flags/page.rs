//! `--max-items N` and `--starting-token TOKEN`: the AWS CLI's pagination of list commands.

use crate::api::Page;
use clap::Args;

/// The AWS CLI's pagination flags.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// Print at most N items, and a `NextToken` when more follow.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_items: Option<u32>,
    /// Continue after a previous page: its `NextToken`.
    #[arg(long, value_name = "TOKEN")]
    pub starting_token: Option<String>,
}

impl PageArgs {
    /// The page asked for.
    pub fn lower(&self) -> Page {
        Page {
            max_items: self.max_items.map(|n| n as usize),
            starting_token: self.starting_token.clone(),
        }
    }
}
