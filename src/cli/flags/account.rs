//! `--region` and `--account-id`: where executions live, as their ARNs say.

use clap::Args;

/// The region and account of the ARNs a command makes.
#[derive(Debug, Clone, Args)]
pub struct AccountArgs {
    /// The region in ARNs (default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1).
    #[arg(long)]
    pub region: Option<String>,
    /// The account id in ARNs.
    #[arg(long, default_value = "123456789012")]
    pub account_id: String,
}

/// The region and account, lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The region: the flag, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
    pub region: String,
    /// The account id.
    pub account_id: String,
}

impl AccountArgs {
    /// The region (environment fallbacks applied) and the account.
    pub fn lower(&self) -> Account {
        Account {
            region: region(self.region.clone()),
            account_id: self.account_id.clone(),
        }
    }
}

impl Account {
    /// The region and account of an ARN (`arn:aws:states:REGION:ACCOUNT:...`), if it has them.
    pub fn of_arn(arn: &str) -> Option<Account> {
        match arn.splitn(7, ':').collect::<Vec<_>>().as_slice() {
            [_, _, _, region, account, ..] => Some(Account {
                region: (*region).to_owned(),
                account_id: (*account).to_owned(),
            }),
            _ => None,
        }
    }
}

/// The region: the flag, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 (the AWS
/// CLI's order; an empty variable counts as unset).
pub fn region(flag: Option<String>) -> String {
    let env = |name: &str| std::env::var(name).ok().filter(|r| !r.is_empty());
    flag.or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into())
}
